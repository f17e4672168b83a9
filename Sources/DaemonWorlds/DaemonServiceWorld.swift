import EventLoop
import MonitorRules
import ReachabilityRules
import ServiceLog
import Timekeeping

/// The daemon's side of the service's core: its events come from the route watch (routers'
/// announcements), the system bus (the services' link facts, logind's sleeps), the portal APIs' fetches and
/// the targets' wake-ups; what the core decides goes to every target, to the fetcher and to the histories.
public final class DaemonServiceWorld: ServiceWorld {
    private let loop: MainLoop
    private let fetcher: PortalAPIFetcher
    private let history: (any ServiceHistories)?
    private unowned let targets: any ServiceTargets
    public private(set) lazy var driver = ServiceDriver(world: self)
    private let wakeup: WakeupTimer
    private var tickTimer: LoopTimer?

    public init(
        loop: MainLoop, fetcher: PortalAPIFetcher, history: (any ServiceHistories)?, targets: any ServiceTargets
    ) {
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
    }

    public var now: Instant { loop.now() }
    public var slept: Duration { MonotonicClock.slept() }

    public func fetchPortalAPI(link: LinkID, interface: String, uri: String, generation: UInt64, limit: Duration) {
        fetcher.fetch(link, uri, generation, limit: limit)
    }

    public func cancelPortalAPIFetch(link: LinkID) {
        fetcher.cancel(link)
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
