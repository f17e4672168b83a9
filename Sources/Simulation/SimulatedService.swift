import MonitorRules
import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// The simulation as the service core's world, as `DaemonServiceWorld` is the daemon's: the network's
/// captive-portal API answers its fetches, every target hears of link facts and sleeps, and the boot clock
/// runs ahead of the virtual one by the sleeps nobody announced (the core finds them, as the daemon's does).
final class SimulatedService: ServiceWorld {
    // The simulation owns its service and outlives it (as it does its targets).
    private unowned(unsafe) let simulation: Simulation
    private(set) lazy var driver = ServiceDriver(world: self)
    /// Since when the first verdicts wait for the services (nil: they do not).
    private(set) var firstVerdictsHeldSince: Instant?
    /// What NetworkManager says once its first view is complete: wlan0 is metered.
    static let servicesSay = LinkFactsTable(["wlan0": LinkFacts(meteredByNetworkManager: true)])
    /// Whether it said so.
    private(set) var servicesSaid = false
    /// The neighbour checks on the wire, by link and gateway: one at a time for each, however many paths ask.
    private var neighborChecksOut: [NeighborCheckKey: UInt64] = [:]

    struct NeighborCheckKey: Hashable {
        let link: LinkID
        let gateway: IPAddress
    }

    init(simulation: Simulation) {
        self.simulation = simulation
    }

    var now: Instant { simulation.now }
    var slept: Duration { simulation.gateway.bootOffset }

    func handle(_ event: ServiceCore.Event) {
        driver.handle(event)
    }

    /// The network announces its API on every link (or stops), as a router's option 37 does.
    func announceAPI() {
        let uris =
            simulation.apiBehaviour == .none
            ? [:] : ["eth0": "https://api.test/capport", "wlan0": "https://api.test/capport"]
        if uris.isEmpty { simulation.apiAnswers = [:] }
        driver.handle(.routersAnnounced(uris))
    }

    /// A fetch as CheckRun runs it for the daemon: the answer after a round trip, or the limit's end.
    func fetchPortalAPI(link: LinkID, interface: String, uri: String, generation: UInt64, limit: Duration) {
        let (after, result): (Duration, Result<CapportAnswer, StrictJSON.Malformed>) =
            switch simulation.apiBehaviour {
            case .captive:
                (.milliseconds(10), .success(CapportAnswer(captive: true, userPortalURL: Simulation.apiPortalURL)))
            case .open:
                (
                    .milliseconds(10),
                    .success(CapportAnswer(captive: false, secondsRemaining: simulation.random.next() % 4000))
                )
            case .malformed:
                (.milliseconds(10), CapportAnswer.parse(Array(simulation.pick(Simulation.malformedAnswers).utf8)))
            case .hanging, .none: (limit, .failure(StrictJSON.Malformed(text: "timed out")))
            }
        simulation.queue.add(
            .capportAnswer(link: link, interface: interface, generation: generation, result), at: now + after)
    }

    /// Its answer, when it comes, is not taken (the core no longer expects that generation).
    func cancelPortalAPIFetch(link: LinkID) {}

    /// The gateway answers after a round trip, or nothing does within three tries.
    func checkNeighbor(link: LinkID, interfaceIndex: Int32, gateway: IPAddress, source: String, number: UInt64) {
        // Through NAT64 the IPv4 path's next hop is IPv6's.
        if Simulation.gatewayAddress(interfaceIndex, v6: gateway.ipFamily == .v6) != gateway {
            simulation.violation("asked \(gateway), which is not interface \(interfaceIndex)'s next hop")
        }
        let key = NeighborCheckKey(link: link, gateway: gateway)
        if let out = neighborChecksOut[key] {
            simulation.violation("check \(number) of \(gateway) on \(link) went out while check \(out) was running")
        }
        neighborChecksOut[key] = number
        simulation.summary.neighborChecks += 1
        let answering = simulation.gateway.answersNeighbors
        simulation.queue.add(
            .neighborAnswer(link: link, gateway: gateway, number: number, answering ? .reachable : .unreachable),
            at: now + (answering ? .milliseconds(1) : .milliseconds(600)))
    }

    /// Its answer, when it comes, is not taken (the link's core no longer expects that number).
    func cancelNeighborCheck(link: LinkID, gateway: IPAddress, number: UInt64) {
        let key = NeighborCheckKey(link: link, gateway: gateway)
        if neighborChecksOut[key] == number { neighborChecksOut[key] = nil }
    }

    func neighborChecked(link: LinkID, gateway: IPAddress, number: UInt64, _ answer: NeighborAnswer) {
        let key = NeighborCheckKey(link: link, gateway: gateway)
        if neighborChecksOut[key] == number { neighborChecksOut[key] = nil }
        driver.handle(.neighborChecked(link: link, gateway: gateway, number: number, answer))
    }

    func neighborAnswered(
        _ path: ServiceCore.PathKey, generation: UInt64, _ answer: NeighborAnswer, checkedAt: Instant
    ) {
        let target = simulation.targets[path.target]
        target.neighborAnswered(path.family, checkedAt: checkedAt)
        target.take(.path(path.family, .neighborAnswered(generation: generation, answer)))
    }

    func log(_ line: String) {
        simulation.log("service: \(line)")
    }

    /// The service routes each verdict back to its path, with the view of the route's link.
    func route(_ path: ServiceCore.PathKey, _ verdict: ReachabilityVerdict, link: LinkView?) {
        simulation.targets[path.target].path(path.family)?.routeChanged(verdict, link: link)
    }

    /// What the APIs said of a path's link (no ModemManager or NetworkManager here).
    func linkChanged(_ path: ServiceCore.PathKey, _ id: LinkID, _ view: LinkView?) {
        simulation.targets[path.target].take(.path(path.family, .link(id, view)))
    }

    func machineSleeps(_ asleep: Bool) {
        for target in simulation.targets {
            if asleep {
                target.forgetProbesInFlight()
                if let ended = target.history.suspend(boot: simulation.bootTime) { target.noteOutage(ended) }
                target.take(.suspend)
            } else {
                target.history.resume(boot: simulation.bootTime, real: simulation.wallTime)
                target.take(.resume)
                target.diagnosis.lastRediagnosis = simulation.now
            }
        }
    }

    func machineSlept(_ jump: Duration) {
        simulation.summary.sleepsFound.append((now, jump))
        for target in simulation.targets {
            target.history.slept(jump, boot: simulation.bootTime)
            target.forgetProbesInFlight()
            target.take(.suspend)
            target.take(.resume)
            target.diagnosis.lastRediagnosis = simulation.now
        }
    }

    /// ModemManager's and NetworkManager's first view: NetworkManager says wlan0 is metered.
    func servicesReady() {
        servicesSaid = true
        driver.handle(.servicesSaid(Self.servicesSay))
        driver.handle(.servicesReady)
    }

    /// Every target holds back its first verdict (its core decides what that means), or lets it go: then a verdict
    /// held back is published at once.
    func holdFirstVerdicts(_ hold: Bool) {
        if hold {
            firstVerdictsHeldSince = now
        } else if let since = firstVerdictsHeldSince, now - since > ServiceCore.servicesWait {
            simulation.violation("the first verdicts waited \(now - since) for the services (at most 1 s)")
        }
        if !hold { firstVerdictsHeldSince = nil }
        for target in simulation.targets {
            target.take(.holdFirstVerdict(hold))
            guard !hold else { continue }
            let computed = target.driver.ask { $0.state(previous: target.state) }.connectivity
            if target.state.connectivity != computed {
                target.violation(
                    "the verdict held back for the services was not published when let go: "
                        + "\(target.state.connectivity) published, \(computed) known")
            }
        }
    }

    /// The histories are values here: nothing to write.
    func writeHistories() {}

    /// The run loop asks the driver for the one wake-up of the whole set (`ServiceDriver.nextWakeup`) at each step.
    func wakeUp(at deadline: Instant?) {}

    func wakeTarget(_ number: Int) {
        let target = simulation.targets[number]
        target.log("timeout")
        target.take(.timeout)
    }
}
