import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import Timekeeping

/// One family's path of a simulated target, as the world sees it: the route watch it keeps on the
/// shared reachability core, where its probes go and what became of each, its check, this machine's
/// traffic routed like it. What the invariants need, counted from the world's side.
final class SimulatedPath {
    /// The target owns its paths and outlives them.
    unowned(unsafe) let target: SimulatedTarget
    let family: IPFamily
    /// Its watch on the shared reachability core.
    let routeID: ReachabilityCore.TargetID

    // The probes, as the far host saw them.
    struct SentProbe {
        let sentAt: Instant
        let deadline: Instant
        /// Sent beside a probe in flight: its silence or unproven error is no failure of its own.
        let extra: Bool
        var finished = false
        var answered = false
        /// An error that quoted too little to be verified named it: how it failed if no reply comes by its deadline.
        var unproven: String?
    }
    var probeTarget: IPAddress?
    var sent: [UInt16: SentProbe] = [:]
    var lastAnswerAt = Instant.origin
    var failureKindsSinceAnswer: Set<String> = []
    var answersInRow = 0
    /// When the newest probe that got its answer was sent.
    var newestAnsweredSentAt = Instant.origin
    /// When the probe whose failure was the first since the last answer was sent.
    var firstFailureSentAt: Instant?
    /// No probe since the last answer was sent off the schedule (for a Check, a route regained).
    var onScheduleSinceAnswer = true
    var lastForcedAt: Instant?
    var lastRetarget = Instant.origin
    /// When the path's first probe went out.
    var firstSendAt: Instant?
    /// Since when the far host filters ICMP (and answers TCP); whether this path failed meanwhile.
    var filteredSince: Instant?
    var pathTroubleSinceFiltered = false

    // The check of CheckURL.
    /// The check under way, and its limit, max(5 s, Timeout) when it started.
    var runningCheck: (generation: UInt64, startedAt: Instant, limit: Duration)?
    /// The check under way was answered by a middlebox with the echo asked, or had HTTPS dropped with the
    /// secure check on, from its start to its end; and whether the answer the core holds came from such a check.
    var runningCheckFaked = false
    var heldCheckFaked = false

    // Traffic.
    /// Since when the path to Host has failed (the connections routed like it then stall).
    var pathDownSince: Instant?
    /// The newest sample the core took: when, and whether data from a remote routed like Host was in it.
    var lastSample: (at: Instant, receiving: Bool)?
    /// A sample the core took during this step: it counts for skips from the next step on.
    var newSample: (at: Instant, receiving: Bool)?
    /// The word the core last had; a stall (or traffic stopping) still waiting for its probe.
    var lastTraffic: Traffic = .none
    var stallWaitingSince: Instant?
    var resumeWaitingSince: Instant?
    var skippedSinceSend = false
    /// Whether the core was calm when the last step ended, and when its last probe (not an extra one) went out.
    var calmAtLastStep = false
    var lastProbeSentAt: Instant?
    var skippedSoFar = 0

    init(target: SimulatedTarget, family: IPFamily, routeID: ReachabilityCore.TargetID) {
        self.target = target
        self.family = family
        self.routeID = routeID
    }

    /// The path's core, lent in place by the target's driver.
    private lazy var core = target.driver.path(family)
    var path: PathCore {
        unsafeAddress { core }
    }

    var simulation: Simulation { target.simulation }
    var now: Instant { target.simulation.now }
    var settings: ProbeSettings { target.settings }
    var lastSettingsChange: Instant { target.lastSettingsChange }
    var index: Int { target.index }

    func take(_ event: PathEvidence) {
        target.take(.path(family, event))
    }

    func violation(_ rule: String) {
        target.violation(simulation.families.count > 1 ? "\(family): \(rule)" : rule)
    }

    func log(_ text: @autoclosure () -> String) {
        target.log(simulation.families.count > 1 ? "\(family) \(text())" : text())
    }

    /// The Connectivity and Reason this path's rules read: the target's, or on a dual-stack network the family's
    /// own (read in place: a state is large, and this runs at every publication).
    var shownConnectivity: Connectivity {
        guard simulation.families.count > 1 else { return target.state.connectivity }
        return family == .v4 ? target.state.ipv4.connectivity : target.state.ipv6.connectivity
    }

    var shownReason: String {
        guard simulation.families.count > 1 else { return target.state.reason }
        return family == .v4 ? target.state.ipv4.reason : target.state.ipv6.reason
    }

    // MARK: What the driver asks of this path

    func watchRoute(_ address: IPAddress?) {
        simulation.routeNewsSinceCheck = true
        let changed = address != simulation.askReach({ $0.target(routeID) })
        simulation.reach.setTarget(address, for: routeID)
        if changed { simulation.noteKernelTruth(resetting: routeID) }
    }

    func aim(at address: IPAddress?) -> ProbeMethod? {
        probeTarget = address
        lastRetarget = now
        sent = [:]
        failureKindsSinceAnswer = []
        firstFailureSentAt = nil
        onScheduleSinceAnswer = true
        answersInRow = 0
        lastAnswerAt = now
        newestAnsweredSentAt = .origin
        return simulation.scenario.probeMethod
    }

    func send(sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        log(
            "send \(sequence)\(forCheck ? " for a Check" : "") (outstanding \(path.probe.outstandingCount), next wake \(path.probe.nextWakeup.map { "\($0.sinceOrigin)" } ?? "none")\(path.probe.isCalm ? ", calm" : ""))"
        )
        simulation.summary.probesSent += 1
        target.headline.sent(family)
        if firstSendAt == nil {
            firstSendAt = now
            target.checkFirstProbesTogether()
        }
        stallWaitingSince = nil
        resumeWaitingSince = nil
        skippedSinceSend = false
        checkCalmCadence(forCheck: forCheck, extra: extra)
        sent[sequence] = SentProbe(
            sentAt: now, deadline: now + .milliseconds(settings.timeoutMilliseconds), extra: extra)
        if sent.count > 4096 { sent = sent.filter { $0.value.deadline + .seconds(10) > now } }
        if forCheck {
            onScheduleSinceAnswer = false
            simulation.summary.forcedProbes += 1
            noteForcedProbe()
        }
        transmit(sequence, token, alsoTCP: alsoTCP)
    }

    /// The engines suspended (a sleep announced or found): the probes in flight are forgotten, not failed (their
    /// silence is the sleep's); the streaks start afresh.
    func forgetProbesInFlight() {
        for sequence in sent.keys { sent[sequence]?.finished = true }
        answersInRow = 0
        firstFailureSentAt = nil
        failureKindsSinceAnswer = []
    }

    // MARK: What the world hands this path

    /// An answer from the host (an echo reply, or its TCP), or one that claims to be.
    func deliverReply(_ sequence: UInt16, _ token: UInt64, _ via: AnswerPath, fromHost: Bool) {
        // Silence that ended before this answer came first.
        noteExpiries()
        let answeredBefore = path.probe.statistics.answered
        take(.probe(.reply(sequence: sequence, token: token, via: via)))
        if path.probe.statistics.answered > answeredBefore {
            if !fromHost {
                violation(
                    "probe \(sequence) counted as answered though only a router spoke (its ICMP error about the TCP connection)"
                )
            }
            sent[sequence]?.finished = true
            sent[sequence]?.answered = true
            newestAnsweredSentAt = max(newestAnsweredSentAt, sent[sequence]?.sentAt ?? .origin)
            lastAnswerAt = now
            failureKindsSinceAnswer = []
            firstFailureSentAt = nil
            onScheduleSinceAnswer = true
            answersInRow += 1
        }
    }

    /// A TCP probe's connection ended so.
    func ended(_ sequence: UInt16, _ token: UInt64, _ outcome: TCPOutcome, alone: Bool, fromHost: Bool) {
        // The transport's rule: a connection's end counts only while its probe waits.
        let input = outcome.input(
            sequence: sequence, token: token, alone: alone, outstanding: path.isOutstanding(sequence)
        ) {
            "cannot reach the host: error \($0)"
        }
        switch input {
        case .reply(_, _, let via)?:
            deliverReply(sequence, token, via, fromHost: fromHost)
        case .refused(_, _, let reason)?:
            let inFlight = path.isOutstanding(sequence)
            take(.probe(.refused(sequence: sequence, token: token, reason: reason)))
            if inFlight, let probe = sent[sequence], probe.sentAt > newestAnsweredSentAt {
                sent[sequence]?.finished = true
                failureKindsSinceAnswer.insert("refused")
                answersInRow = 0
            }
        default:
            break
        }
    }

    /// A router's ICMP error quoting one of the probes (or claiming to).
    func deliverError(_ sequence: UInt16, _ token: UInt64?, _ failure: EchoPacket.Failure) {
        let foreignBefore = path.probe.statistics.foreign
        take(.probe(.error(sequence: sequence, token: token, failure, from: "198.18.200.1")))
        // About a probe in flight (else it was counted foreign).
        guard path.probe.statistics.foreign == foreignBefore else { return }
        // An error that cannot be verified ends nothing: a reply may still come, and only its deadline decides.
        guard token != nil else {
            sent[sequence]?.unproven = failure == .timeExceeded ? "time exceeded" : "unproven"
            return
        }
        sent[sequence]?.finished = true
        // A probe older than the newest answered one: old news, no failure.
        guard let probe = sent[sequence], probe.sentAt > newestAnsweredSentAt,
            !probe.extra || failure != .timeExceeded
        else { return }
        if firstFailureSentAt == nil { firstFailureSentAt = probe.sentAt }
        failureKindsSinceAnswer.insert(failure == .timeExceeded ? "time exceeded" : "refused")
        answersInRow = 0
    }

    /// Forged answers and errors: they know what /proc/net/icmp shows and can guess sequences near
    /// ours; never the token. Sorted: a dictionary's order changes from process to process, and a
    /// seed must replay anywhere.
    func forge(_ count: Int) {
        let outstanding = sent.filter { !$0.value.finished && $0.value.deadline > now }.map(\.key).sorted()
        for _ in 0..<count {
            let random = simulation.random.next()
            let sequence =
                outstanding.isEmpty
                ? UInt16(truncatingIfNeeded: random) : outstanding[Int(random % UInt64(outstanding.count))]
            let at = now + .nanoseconds(simulation.random.next() % 500_000_000)
            if simulation.random.next() % 2 == 0 {
                simulation.queue.add(
                    .icmpError(target: index, family, sequence: sequence, token: nil, .unreachable(code: 1)), at: at)
            } else {
                simulation.queue.add(
                    .reply(target: index, family, sequence: sequence, token: simulation.random.next(), via: .icmp),
                    at: at)
            }
        }
    }
}
