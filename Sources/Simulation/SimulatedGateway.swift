import MonitorRules
import NetAddress
import ProbeRules
import Timekeeping

/// The simulated world's next hop and what lies past it, and the machine's sleeps, shared by every
/// target; with the rules of INTERFACE.md "Where it broke" that hold over each target's diagnosis
/// and history: Blame within 1.5 s of the change; never `gateway` while the gateway answers its
/// neighbour check; no outage spans an announced sleep; TimeInState adds up to the time since the
/// history began.
struct GatewayWorld {
    /// The gateway answers ARP / Neighbor Solicitations; forwards; the path past it carries packets.
    var answersNeighbors = true
    var forwards = true
    var upstreamCarries = true
    /// Since when the gateway has answered its neighbours without a break (nil while it does not).
    var answeringSince: Instant? = .origin
    /// How far the boot clock is ahead of the virtual (monotonic) one: the sleeps nobody announced.
    var bootOffset = Duration.zero
    /// The announced sleep under way, and those that ended (boot clock).
    var asleepSince: BootTime?
    var sleeps: [(start: BootTime, end: BootTime)] = []

    /// Whether a probe past the gateway gets anywhere.
    var carries: Bool { forwards && upstreamCarries }
}

/// What one target's diagnosis asked, and since when its Connectivity has gone unblamed.
struct DiagnosisWatch {
    /// When the check whose answer each family heard last went out (shared with other targets, or reused).
    var lastCheckAskedAt: [IPFamily: Instant] = [:]
    /// Since when Connectivity has been away from `full` with no Blame (nil: it is full, or Blame is said).
    var unblamedSince: Instant?
    /// The last moment the place of a fault could move: a next hop asked, a resume.
    var lastRediagnosis = Instant.origin
    var probedBeyond = 0
}

extension Simulation {
    /// The default target's outages, oldest first; its TimeInState at the end; the next hops it asked and its probes past them.
    public var outages: [Outage] { first.history.outages }
    public var timeInState: [String: UInt64] {
        Dictionary(uniqueKeysWithValues: first.history.timeInState(boot: bootTime))
    }
    public var neighborChecksAsked: Int { summary.neighborChecks }
    public var probesPastTheGateway: Int { first.diagnosis.probedBeyond }

    /// The simulated CLOCK_BOOTTIME now.
    var bootTime: BootTime { BootTime(sinceBoot: (now + gateway.bootOffset).sinceOrigin) }
    /// The simulated CLOCK_REALTIME now: it reads as the boot clock does.
    var wallTime: WallTime { WallTime(sinceEpoch: bootTime.sinceBoot) }

    static func gatewayAddress(_ index: Int32, v6 six: Bool) -> IPAddress {
        six ? v6(UInt8(index), 254) : .v4([198, 18, UInt8(index), 254])
    }

    func applyGatewayFault(_ fault: Scenario.Fault) {
        switch fault {
        case .gateway(let arp):
            gateway.forwards = false
            setAnswersNeighbors(arp)
        case .upstreamDies:
            gateway.upstreamCarries = false
        case .sleep(let milliseconds, let announced):
            guard gateway.asleepSince == nil else { return }
            if announced {
                gateway.asleepSince = bootTime
                service.handle(.sleepAnnounced(true))
                queue.add(.wake, at: now + .milliseconds(milliseconds))
            } else {
                // Monotonic time stands still; the boot clock jumps; the service's core finds it before any
                // target's next wake-up, as the daemon's does.
                gateway.bootOffset += .milliseconds(milliseconds)
            }
        case .heal:
            gateway.forwards = true
            gateway.upstreamCarries = true
            setAnswersNeighbors(true)
        default:
            break
        }
    }

    func wake() {
        guard let start = gateway.asleepSince else { return }
        gateway.asleepSince = nil
        gateway.sleeps.append((start, bootTime))
        service.handle(.sleepAnnounced(false))
    }

    private func setAnswersNeighbors(_ answering: Bool) {
        if answering, !gateway.answersNeighbors { gateway.answeringSince = now }
        if !answering { gateway.answeringSince = nil }
        gateway.answersNeighbors = answering
    }
}

extension SimulatedTarget {
    /// The one probe past the gateway: a router past it says Time Exceeded, or nothing does within 1 s.
    func probeBeyond(_ family: IPFamily, generation: UInt64) {
        diagnosis.probedBeyond += 1
        let carried = simulation.gateway.carries
        simulation.queue.add(
            .beyondAnswer(target: index, family: family, generation: generation, carried ? .carried : .silent),
            at: now + (carried ? .milliseconds(3) : .seconds(1)))
    }

    /// `family`'s next hop's answer came, from a check that went out at `checkedAt`.
    func neighborAnswered(_ family: IPFamily, checkedAt: Instant) {
        diagnosis.lastCheckAskedAt[family] = checkedAt
        diagnosis.lastRediagnosis = max(diagnosis.lastRediagnosis, checkedAt)
    }

    /// After each publication: the history hears it, and Blame's rules are checked.
    func checkWhereItBroke() {
        let gateway = simulation.gateway
        if gateway.asleepSince == nil,
            let ended = history.observe(
                state.connectivity, blame: state.blame, reason: state.reason, boot: simulation.bootTime,
                real: simulation.wallTime)
        {
            noteOutage(ended)
        }
        // Blame is the headline family's: the rule holds over the family whose answer is oldest.
        if state.blame == .gateway, let since = gateway.answeringSince,
            let asked = diagnosis.lastCheckAskedAt.values.min(),
            since < asked
        {
            violation("Blame is gateway, but the gateway has answered its neighbours since before it was last asked")
        }
        let away = state.connectivity == .none || state.connectivity == .limited || state.connectivity == .portal
        if away && state.blame == nil {
            if diagnosis.unblamedSince == nil { diagnosis.unblamedSince = now }
        } else {
            diagnosis.unblamedSince = nil
        }
        if away, let blame = state.blame, blame != .link, state.connectivity == .none, state.reason.isEmpty {
            violation("Blame \(blame) with no Reason")
        }
    }

    /// Blame is said within 1.5 s of Connectivity leaving `full` (or of the next hop changing, or a resume).
    func checkBlameLate() {
        guard let since = diagnosis.unblamedSince, simulation.gateway.asleepSince == nil else { return }
        let from = max(since, diagnosis.lastRediagnosis)
        if now > from + .milliseconds(1_500) {
            violation("Connectivity \(state.connectivity) for \(now - from) with no Blame (\(state.reason))")
        }
    }

    /// An outage the history kept: it never spans an announced sleep.
    func noteOutage(_ outage: Outage) {
        // The simulated wall clock reads as its boot clock.
        let start = BootTime(sinceBoot: outage.start.sinceEpoch)
        let end = start + outage.duration
        for sleep in simulation.gateway.sleeps where sleep.start >= start && sleep.end <= end {
            violation("an outage from \(start.sinceBoot) for \(outage.duration) spans a sleep")
        }
    }

    /// At the end: TimeInState adds up to the time since the history began, within a second (or one Interval).
    func checkTimeInState() {
        let boot = simulation.bootTime
        let total = Duration.seconds(history.timeInState(boot: boot).reduce(UInt64(0)) { $0 + $1.1 })
        let slack = max(Duration.seconds(1), .milliseconds(settings.intervalMilliseconds))
        if total > boot.sinceBoot || boot.sinceBoot - total > slack {
            violation("TimeInState adds up to \(total), but the history began \(boot.sinceBoot) ago")
        }
    }
}
