import MonitorRules
import Timekeeping

/// The simulation as the service core's world, as `DaemonServiceWorld` is the daemon's: the network's
/// captive-portal API answers its fetches, every target hears of link facts and sleeps, and the boot clock
/// runs ahead of the virtual one by the sleeps nobody announced (the core finds them, as the daemon's does).
final class SimulatedService: ServiceWorld {
    // The simulation owns its service and outlives it (as it does its targets).
    private unowned(unsafe) let simulation: Simulation
    private(set) lazy var driver = ServiceDriver(world: self)
    private var wakeAt: Instant?

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

    /// The core's wake-up came.
    func woke() {
        wakeAt = nil
        driver.handle(.timeout)
    }

    /// A fetch as CheckRun runs it for the daemon: the answer after a round trip, or the limit's end.
    func fetchPortalAPI(interface: String, uri: String, generation: UInt64) {
        let limit = Duration.milliseconds(
            PortalCheck.limitMilliseconds(timeout: simulation.first.settings.timeoutMilliseconds))
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
        simulation.queue.add(.capportAnswer(interface: interface, generation: generation, result), at: now + after)
    }

    /// Its answer, when it comes, is not taken (the core no longer expects that generation).
    func cancelPortalAPIFetch(interface: String) {}

    func log(_ line: String) {
        simulation.log("service: \(line)")
    }

    /// What the APIs said, in the link facts every target reads (no ModemManager or NetworkManager here).
    func linkFactsChanged(_ table: LinkFactsTable) {
        for target in simulation.targets { target.take(.linkFacts(table)) }
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

    /// No ModemManager or NetworkManager is followed here, so no first verdict waits for them.
    func holdFirstVerdicts(_ hold: Bool) {}

    /// The histories are values here: nothing to write.
    func writeHistories() {}

    func wakeUp(at deadline: Instant?) {
        guard let deadline, wakeAt.map({ deadline < $0 }) ?? true else { return }
        wakeAt = deadline
        simulation.queue.add(.serviceWake, at: max(deadline, now))
    }
}
