import EventLoop
import MonitorRules
import NetAddress
import Probe
import ProbeRules
import ReachabilityRules
import ServiceLog
import Timekeeping

/// The daemon's side of the service's core: its events come from the route watch (routers'
/// announcements), the system bus (the services' link facts, logind's sleeps), the portal APIs' fetches and
/// the targets' wake-ups; what the core decides goes to every target, to the fetcher, to the histories and to the
/// links' next hops (one neighbour check per link and gateway, which every path routed there shares).
public final class DaemonServiceWorld: ServiceWorld {
    /// Starts one neighbour check, answering through its completion, never from inside the call (a
    /// `NeighborCheckRun`; tests bring another); it returns what cancels the check, and keeps it running until then.
    public typealias NeighborCheckStarter =
        (
            _ gateway: IPAddress, _ interfaceIndex: Int32, _ source: IPAddress?,
            _ completion: @escaping (NeighborAnswer) -> Void
        ) -> (() -> Void)

    private struct NeighborCheckKey: Hashable {
        let link: LinkID
        let gateway: IPAddress
    }

    private let loop: MainLoop
    private let fetcher: PortalAPIFetcher
    private let history: (any ServiceHistories)?
    private unowned let targets: any ServiceTargets
    public private(set) lazy var driver = ServiceDriver(world: self)
    private let wakeup: WakeupTimer
    private var tickTimer: LoopTimer?
    private let startNeighborCheck: NeighborCheckStarter
    /// The checks on the wire (bounded by the links and the gateways the targets' routes name).
    private var neighborChecks: [NeighborCheckKey: (number: UInt64, cancel: () -> Void)] = [:]
    /// Checks that went on the wire (for tests).
    public private(set) var neighborChecksStarted = 0

    public init(
        loop: MainLoop, fetcher: PortalAPIFetcher, history: (any ServiceHistories)?, targets: any ServiceTargets,
        startNeighborCheck: NeighborCheckStarter? = nil
    ) {
        self.startNeighborCheck =
            startNeighborCheck ?? { gateway, index, source, completion in
                let run = NeighborCheckRun(
                    loop: loop, gateway: gateway, interfaceIndex: index, source: source, completion: completion)
                return { run.cancel() }
            }
        self.loop = loop
        self.fetcher = fetcher
        self.history = history
        self.targets = targets
        wakeup = WakeupTimer(loop: loop)
        wakeup.onFire = { [unowned self] in driver.wake() }
        fetcher.onFetched = { [unowned self] link, generation, result in
            driver.handle(.portalAPIFetched(link: link, generation: generation, result))
        }
        targets.service = driver
        // Housekeeping rides on the loop's other wake-ups: it adds none of its own while any come.
        tickTimer = loop.schedule(after: ServiceCore.tick, leeway: ServiceCore.tick, repeats: true) {
            [unowned self] in driver.handle(.tick)
        }
    }

    deinit {
        if let tickTimer { loop.cancel(tickTimer) }
        for entry in neighborChecks.values { entry.cancel() }
    }

    public var now: Instant { loop.now() }
    public var slept: Duration { MonotonicClock.slept() }

    public func fetchPortalAPI(link: LinkID, interface: String, uri: String, generation: UInt64, limit: Duration) {
        fetcher.fetch(link, uri, generation, limit: limit)
    }

    public func cancelPortalAPIFetch(link: LinkID) {
        fetcher.cancel(link)
    }

    public func checkNeighbor(
        link: LinkID, interfaceIndex: Int32, gateway: IPAddress, source: String, number: UInt64
    ) {
        let key = NeighborCheckKey(link: link, gateway: gateway)
        neighborChecks.removeValue(forKey: key)?.cancel()
        neighborChecksStarted += 1
        let cancel = startNeighborCheck(gateway, interfaceIndex, IPAddress(source)) { [weak self] answer in
            guard let self, neighborChecks[key]?.number == number else { return }
            neighborChecks[key] = nil
            driver.handle(.neighborChecked(link: link, gateway: gateway, number: number, answer))
        }
        neighborChecks[key] = (number, cancel)
    }

    public func cancelNeighborCheck(link: LinkID, gateway: IPAddress, number: UInt64) {
        let key = NeighborCheckKey(link: link, gateway: gateway)
        guard neighborChecks[key]?.number == number else { return }
        neighborChecks.removeValue(forKey: key)?.cancel()
    }

    public func neighborAnswered(
        _ path: ServiceCore.PathKey, generation: UInt64, _ answer: NeighborAnswer, checkedAt: Instant
    ) {
        targets.neighborAnswered(path, generation: generation, answer)
    }

    public func log(_ line: String) {
        Log.info(line)
    }

    public func route(_ path: ServiceCore.PathKey, _ verdict: ReachabilityVerdict, link: LinkView?) {
        targets.route(path, verdict, link: link)
    }

    public func linkChanged(_ path: ServiceCore.PathKey, _ id: LinkID, _ view: LinkView?) {
        targets.linkChanged(path, id, view)
    }

    public func machineSleeps(_ asleep: Bool) {
        history?.sleep(asleep)
        targets.sleep(asleep)
    }

    public func machineSlept(_ jump: Duration) {
        history?.slept(jump)
        targets.sleep(true)
        targets.sleep(false)
    }

    public func holdFirstVerdicts(_ hold: Bool) {
        targets.holdFirstVerdicts(hold)
    }

    public func writeHistories() {
        history?.writeAll()
    }

    public func wakeTarget(_ number: Int) {
        targets.wake(number)
    }

    public func wakeUp(at deadline: Instant?) {
        wakeup.arm(at: deadline)
    }
}
