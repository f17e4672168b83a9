import Timekeeping

/// The probe schedule and verdict, without I/O (in the manner of quinn-proto).
///
/// Events come in as method calls, each with `now` (an `Instant` on a monotonic
/// clock): a reply, an ICMP error, a refusal, a failed send, a Check, a route
/// regained, a setting, a new target, or `handleTimeout` once `nextWakeup` has
/// come. What the driver must do comes out of `takeOutputs()`: send a probe,
/// tell that a verdict is in, publish a new report. The driver owns the socket
/// and the one timer; the simulation drives the same core on a virtual clock.
public struct ProbeCore: Sendable {
    public enum Output: Equatable, Sendable {
        /// Send echo request `sequence` carrying `token`, now. `forCheck`: a Check forced it;
        /// `extra`: sent beside a probe in flight, its silence adds no failure of its own;
        /// `alsoTCP`: open a TCP connection to the host at the same moment (the probe ladder),
        /// whose acceptance or refusal answers the probe as well.
        case send(sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool)
        /// A probe ended (answered, lost or refused): a verdict is in; pending Checks answer now.
        case probeFinished
        /// The report changed.
        case report(old: ProbeReport, new: ProbeReport)
    }

    public private(set) var settings: ProbeSettings
    public private(set) var target: ProbeTarget?
    public private(set) var report = ProbeReport()
    public private(set) var statistics = ProbeStatistics()
    public private(set) var verdict: ProbeVerdict
    private(set) var tracker: ProbeTracker
    private var random: SeededRandom
    private var method: ProbeMethod?
    /// The probe sent last, and whether an echo reply answered it: each probe sent while the
    /// previous one has no echo reply (lost, answered by TCP only, or still waiting) also tries TCP.
    private var lastSent: (sequence: UInt16, echoReplied: Bool)?
    private var answeredBy: AnswerPath?
    /// Smoothed round trip (RFC 6298 style, α = 1/8); zero until the first answer.
    private var smoothedRoundTrip = Duration.zero
    private(set) var nextProbeAt: Instant?
    /// When to send a follow-up if probe `sequence` is still unanswered.
    private(set) var overdue: (at: Instant, sequence: UInt16)?
    /// When the probe Checks wait for goes out (one was forced less than a Timeout before).
    private(set) var deferredProbeAt: Instant?
    private var lastForcedProbe: Instant?
    /// When a new target's first probe last went out.
    private var lastFirstProbe: Instant?
    /// When the newest probe that got an answer was sent: an older probe lost after that is old news.
    private var newestAnsweredSentAt: Instant?
    /// What the machine's own traffic says (see `trafficChanged`).
    public private(set) var traffic: Traffic = .none
    /// A scheduled probe was skipped for flowing traffic since the last one went out.
    private var owedProbe = false
    private var outputs: [Output] = []
    /// The machine sleeps: nothing goes out until `resume`.
    public private(set) var asleep = false
    /// Calm or unsure (`adaptive` only; see `ProbeCalm`).
    private var calm = ProbeCalm()
    /// When the last probe went out.
    private var lastSentAt: Instant?
    /// Whether the next probe is the Interval's catching up with a calm that ended (not a tick of the grid).
    private var catchingUp = false

    /// `slot` and `stride` (a power of two): this core's sequences are those ≡ slot mod stride,
    /// so cores sharing one socket never use the same sequence.
    public init(settings: ProbeSettings = ProbeSettings(), seed: UInt64, slot: UInt16 = 0, stride: UInt16 = 1) {
        self.settings = settings
        random = SeededRandom(seed: seed)
        let first = UInt16(truncatingIfNeeded: random.next()) & ~(max(stride, 1) - 1) | (slot & (max(stride, 1) - 1))
        tracker = ProbeTracker(firstSequence: first, stride: stride)
        verdict = ProbeVerdict(
            failureThreshold: settings.failureThreshold, recoveryThreshold: settings.recoveryThreshold)
    }

    /// What to do, in order, since the last call.
    public mutating func takeOutputs() -> [Output] {
        guard !outputs.isEmpty else { return [] }
        defer { outputs = [] }
        return outputs
    }

    /// The same, moved into `buffer` (emptied first): each array's storage stays in use, step after step.
    public mutating func takeOutputs(into buffer: inout [Output]) {
        buffer.removeAll(keepingCapacity: true)
        swap(&buffer, &outputs)
    }

    /// When `handleTimeout` is due next; nil when nothing is scheduled. Kept up to date by
    /// every event (a stored value: drivers read it after each one).
    public private(set) var nextWakeup: Instant?

    private mutating func refreshWakeup() {
        // A watch for an overdue probe that has finished would only wake the driver for nothing.
        if let watched = overdue, tracker.outstanding[watched.sequence] == nil { overdue = nil }
        // Whatever ended the calm (a suspicion, Connectivity no longer full), the Interval rules from the last probe.
        let calmAfter = calmNow
        if isCalm, !calmAfter, let next = nextProbeAt {
            let tick = ProbeGrid.next(after: lastSentAt ?? next, interval: settings.interval)
            if tick < next {
                nextProbeAt = tick
                // Perhaps already past: the schedule goes on from when it goes out, not from this tick.
                catchingUp = true
            }
        }
        isCalm = calmAfter
        calmPeriod = currentCalmPeriod
        suspicionOpen = calm.suspicionOpenedAt != nil
        nextWakeup = earliestDeadline
    }

    /// Whether probe `sequence` is still waiting for its answer.
    public func isOutstanding(_ sequence: UInt16) -> Bool { tracker.outstanding[sequence] != nil }
    public var outstandingCount: Int { tracker.outstanding.count }
    /// A probe is in flight, or one a Check wants is yet to go: a `.probeFinished` is still to come.
    public var awaitingVerdict: Bool { !tracker.outstanding.isEmpty || deferredProbeAt != nil }
    /// The host answers, but the last probe went unanswered: an outage may be starting.
    public var suspicious: Bool { verdict.answering == true && verdict.consecutiveFailures > 0 }
    /// When the schedule probes next.
    public var nextScheduledProbe: Instant? { nextProbeAt }
    /// Calm (INTERFACE.md "Quiet by default"): `adaptive`, answering, Connectivity `full`, no suspicion open; one
    /// probe per `calmPeriod` then.
    /// Stored, as of the last event, so that a core read in place is not copied to answer (see `refreshWakeup`).
    public private(set) var isCalm = false
    public private(set) var calmPeriod = Duration.zero
    private var calmNow: Bool { calm.isCalm(settings, answering: verdict.answering) }
    private var currentCalmPeriod: Duration { calm.period(settings) }
    /// A suspicion is open (only `adaptive` opens one).
    public private(set) var suspicionOpen = false

    // MARK: Events from the application

    /// A new target (or none): starts over with no verdict and probes at once.
    /// `method` is how the driver will send to it.
    public mutating func start(target: ProbeTarget?, method: ProbeMethod?, now: Instant) {
        defer { refreshWakeup() }
        nextProbeAt = nil
        overdue = nil
        deferredProbeAt = nil
        smoothedRoundTrip = .zero
        newestAnsweredSentAt = nil
        lastSent = nil
        answeredBy = nil
        owedProbe = false
        tracker.reset()
        verdict.reset()
        report = ProbeReport()
        report.probesSent = UInt64(statistics.sent)
        report.probesAnswered = UInt64(statistics.answered)
        report.probesSkipped = UInt64(statistics.skipped)
        self.target = target
        self.method = method
        calm.openSuspicion(now: now)
        publish()
        guard target != nil else { return }
        // A new target's first probe is the service's own: it never takes the slot a Check may force a
        // probe in. However often the target changes, at most one such probe goes out per Timeout (later
        // ones wait for the schedule's first tick, a Timeout after the last).
        if let last = lastFirstProbe, now &- last < settings.timeout {
            nextProbeAt = last &+ settings.timeout
            return
        }
        lastFirstProbe = now
        sendProbe(now: now)
    }

    public mutating func updateSettings(_ new: ProbeSettings, now: Instant) {
        defer { refreshWakeup() }
        let old = settings
        let wasCalm = calmNow
        settings = new
        verdict.failureThreshold = new.failureThreshold
        verdict.recoveryThreshold = new.recoveryThreshold
        // A Set of the Interval, the Timeout, a threshold or Probing itself is a suspicion; a new IdleInterval
        // applies to the next calm probe.
        if new.intervalMilliseconds != old.intervalMilliseconds || new.timeoutMilliseconds != old.timeoutMilliseconds
            || new.failureThreshold != old.failureThreshold || new.recoveryThreshold != old.recoveryThreshold
            || new.probing != old.probing
        {
            calm.openSuspicion(now: now)
        } else if new.idleIntervalMilliseconds != old.idleIntervalMilliseconds, wasCalm, calmNow {
            rescheduleCalm(now: now)
        }
        // A new Interval applies from the next probe on (so does a change of Probing: from calm, the Interval).
        if new.intervalMilliseconds != old.intervalMilliseconds || (wasCalm && !calmNow), target != nil {
            nextProbeAt = now &+ new.interval
        }
        // The probe Checks wait for goes out one (new) Timeout after the last forced one.
        if deferredProbeAt != nil, let last = lastForcedProbe {
            deferredProbeAt = max(last &+ new.timeout, now)
        }
    }

    /// Probes now, outside the schedule; the schedule continues from here. Sent while
    /// another probe is in flight, it is in flight with it: its loss is no failure of its own.
    public mutating func probeNow(now: Instant) {
        defer { refreshWakeup() }
        guard target != nil else { return }
        sendProbe(now: now, extra: !tracker.outstanding.isEmpty)
    }

    /// Another family of the target has `failures` in a row (a suspicion). While this family answers, a fresh
    /// probe goes out now, and its silence continues those failures: an upstream dead for every family is then
    /// confirmed no later than the other family's own would be. Probes already in flight overlapped the other
    /// family's lost one, so they carry no such credit. An answer ends the run of failures as always;
    /// `withdrawCredit` ends the credit when the other family answers first. A family that does not answer is
    /// only probed at once, unless a probe is in flight.
    public mutating func probeNow(continuing failures: UInt32, now: Instant) {
        defer { refreshWakeup() }
        guard target != nil, !asleep else { return }
        // Another family's suspicion is this one's too: the Interval until it closes.
        calm.openSuspicion(now: now)
        guard verdict.answering == true, failures > 0 else {
            if tracker.outstanding.isEmpty { sendProbe(now: now) }
            return
        }
        sendProbe(now: now)
        if let sequence = lastSent?.sequence { tracker.credit(sequence, failures) }
    }

    /// The other family answered again: its failures are no longer this family's.
    public mutating func withdrawCredit() {
        tracker.withdrawCredit()
    }

    /// A Check wants a fresh verdict. It shares a probe already in flight; else a
    /// probe is forced now, or, when one was forced within the last Timeout, once
    /// that Timeout has passed (every Check meanwhile shares it). So no number of
    /// Checks sends more than one extra probe per Timeout, and each gets a verdict
    /// from a probe sent after it arrived, within two Timeouts. Returns false when
    /// there is nothing to probe; else `.probeFinished` follows.
    public mutating func check(now: Instant) -> Bool {
        defer { refreshWakeup() }
        guard target != nil, !asleep else { return false }
        if !tracker.outstanding.isEmpty || deferredProbeAt != nil { return true }
        if mayForceProbe(now: now) { forceProbe(now: now) }
        return true
    }

    /// The route came back: the next probes go back to back until the host counts as answering.
    /// `firstKnown`: the kernel's first word on the route; the target's first probe, in flight or already
    /// answered, speaks for it, and no second one goes out (one that failed is followed at once).
    public mutating func routeRegained(now: Instant, firstKnown: Bool = false) {
        defer { refreshWakeup() }
        calm.openSuspicion(now: now)
        verdict.recoveringBackToBack = verdict.answering != true
        if firstKnown && (!tracker.outstanding.isEmpty || verdict.answering == true) { return }
        probeNow(now: now)
    }

    /// What the machine's own traffic says changed. A stall is a suspicion: while the host
    /// answers, a probe goes out at once unless one is in flight (at most one forced probe per
    /// Timeout, shared with Checks). A probe skipped for flowing traffic goes out as soon as
    /// traffic stops flowing. Traffic never makes the host answer or fail by itself.
    public mutating func trafficChanged(_ new: Traffic, now: Instant) {
        defer { refreshWakeup() }
        let old = traffic
        traffic = new
        guard new != old, target != nil, !asleep else { return }
        if new == .stalled { calm.openSuspicion(now: now) }
        if new == .stalled, verdict.answering == true, tracker.outstanding.isEmpty, deferredProbeAt == nil {
            if mayForceProbe(now: now) {
                statistics.suspicions += 1
                forceProbe(now: now)
            }
        } else if old == .flowing, owedProbe, tracker.outstanding.isEmpty {
            nextProbeAt = nil
            sendProbe(now: now)
        }
    }

    /// Something outside the probes makes the path doubtful (INTERFACE.md "Quiet by default": the route to Host
    /// changed, the neighbour check found the gateway unreachable, a fresh lookup failed …): a suspicion opens, and a
    /// calm family probes at once. Under `steady` nothing changes: the Interval already rules.
    public mutating func suspect(now: Instant) {
        guard settings.probing == .adaptive, target != nil else { return }
        let wasCalm = calmNow
        calm.openSuspicion(now: now)
        guard wasCalm, !asleep else { return }
        // Unsure now: `refreshWakeup` brings the Interval back for a probe in flight.
        defer { refreshWakeup() }
        if tracker.outstanding.isEmpty { sendProbe(now: now) }
    }

    /// What the path says besides the probes: its Connectivity is `full` or not (not `full`: unsure, probed at the
    /// Interval), and whether its link is metered (the calm period four times as long).
    public mutating func pathSays(connectivityFull: Bool, metered: Bool, now: Instant) {
        guard calm.connectivityNotFull == connectivityFull || calm.metered != metered else { return }
        let wasCalm = calmNow
        let period = currentCalmPeriod
        calm.connectivityNotFull = !connectivityFull
        calm.metered = metered
        guard target != nil, !asleep, wasCalm || calmNow else { return }
        // Calm no more: `refreshWakeup` brings the Interval back.
        defer { refreshWakeup() }
        if calmNow, !wasCalm {
            becameCalm(now: now)
        } else if calmNow, period != currentCalmPeriod {
            rescheduleCalm(now: now)
        }
    }

    /// The machine goes to sleep: probes in flight are forgotten (their silence would be the sleep's,
    /// not the host's), nothing is scheduled, and nothing goes out until `resume`. The verdict stays.
    public mutating func suspend() {
        defer { refreshWakeup() }
        let waited = !tracker.outstanding.isEmpty || deferredProbeAt != nil
        asleep = true
        tracker.reset()
        verdict.startStreaksAfresh()
        nextProbeAt = nil
        overdue = nil
        deferredProbeAt = nil
        if waited { outputs.append(.probeFinished) }
        publish()
    }

    /// The machine woke: a probe goes out at once, and the schedule continues from it.
    public mutating func resume(now: Instant) {
        defer { refreshWakeup() }
        guard asleep else { return }
        asleep = false
        calm.openSuspicion(now: now)
        sendProbe(now: now)
    }

    // MARK: Events from the network

    /// An echo reply with this sequence and token arrived (`via` .icmp), or the host
    /// accepted or refused the probe's TCP connection (`via` .tcp).
    @discardableResult
    public mutating func receiveReply(
        sequence: UInt16, token: UInt64, now: Instant, via path: AnswerPath = .icmp
    )
        -> ProbeTracker.ReplyOutcome
    {
        defer { refreshWakeup() }
        let outcome = tracker.reply(sequence: sequence, token: token, now: now)
        switch outcome {
        case .answered(_, let rtt):
            statistics.answered += 1
            if path == .icmp, lastSent?.sequence == sequence { lastSent?.echoReplied = true }
            answeredBy = path
            newestAnsweredSentAt = max(newestAnsweredSentAt ?? .origin, now &- rtt)
            smoothedRoundTrip = smoothedRoundTrip == .zero ? rtt : (7 * smoothedRoundTrip + rtt) / 8
            finish(.answered(roundTrip: rtt), now: now)
        case .late:
            statistics.late += 1
            verdict.noteLateReply(timeoutMilliseconds: settings.timeoutMilliseconds)
            publish()
        case .duplicate:
            statistics.duplicates += 1
            // The echo reply to a probe its TCP connection answered first: ICMP works again.
            if path == .icmp && answeredBy == .tcp {
                if lastSent?.sequence == sequence { lastSent?.echoReplied = true }
                answeredBy = .icmp
                publish()
            }
        case .foreign:
            statistics.foreign += 1
        }
        return outcome
    }

    /// An ICMP error quoting our probe `sequence` (and its token when the quote was long
    /// enough), sent by `router`. An Unreachable that quotes the whole probe ends it at
    /// once. One that quotes less proves nothing anyone who learnt the identifier and
    /// sequence could not forge: the probe keeps waiting, a real reply wins, and only if
    /// none comes by its deadline does it count as one failed probe, like silence. So a
    /// forger neither ends a probe early nor earns a second failure from the follow-up.
    /// Returns whether the error was about a probe in flight (else it is counted foreign).
    @discardableResult
    public mutating func receiveError(
        sequence: UInt16, token: UInt64?, _ failure: EchoPacket.Failure,
        from router: String?, now: Instant
    ) -> Bool {
        defer { refreshWakeup() }
        let from = router ?? "a router"
        guard let target else {
            statistics.foreign += 1
            return false
        }
        guard let token else {
            let outcome: ProbeOutcome = failure == .timeExceeded ? .timeExceeded(from: from) : .unproven(from: from)
            guard tracker.noteUnproven(sequence: sequence, outcome) else {
                statistics.foreign += 1
                return false
            }
            statistics.errors += 1
            return true
        }
        guard let probe = tracker.error(sequence: sequence, token: token) else {
            statistics.foreign += 1
            return false
        }
        statistics.errors += 1
        if finishedAsOldNews(probe) { return true }
        if probe.isExtra, failure == .timeExceeded {
            // Sent beside a probe that counts: like its silence, its Time Exceeded is not a failure of its own.
            outputs.append(.probeFinished)
            if verdict.wantsImmediateProbe && tracker.outstanding.isEmpty { sendProbe(now: now) }
            return true
        }
        switch failure {
        case .timeExceeded:
            finish(.timeExceeded(from: from), now: now)
        case .unreachable(let code):
            let text = Self.unreachableText(code, family: target.family)
            finish(.refused(reason: "\(target.name) unreachable (\(text)), said \(from)"), now: now)
        }
        return true
    }

    /// The system refused probe `sequence` (a local error from the socket's error queue, a
    /// TCP connection refused by the network): not answering at once.
    public mutating func refuse(sequence: UInt16, token: UInt64?, reason: String, now: Instant) {
        defer { refreshWakeup() }
        guard let probe = tracker.error(sequence: sequence, token: token) else {
            statistics.foreign += 1
            return
        }
        statistics.errors += 1
        if finishedAsOldNews(probe) { return }
        finish(.refused(reason: reason), now: now)
    }

    /// Sending probe `sequence` failed. A transient failure (no buffer space) is a lost
    /// probe; anything else (no route, not permitted) a refusal. Returns whether it was in flight.
    @discardableResult
    public mutating func sendFailed(sequence: UInt16, transient: Bool, reason: String, now: Instant) -> Bool {
        defer { refreshWakeup() }
        guard tracker.error(sequence: sequence, token: nil) != nil else { return false }
        statistics.errors += 1
        finish(transient ? .lost : .refused(reason: reason), now: now)
        return true
    }

    /// Something arrived that the driver could already tell is not ours.
    public mutating func countForeign() {
        statistics.foreign += 1
    }

    // MARK: Time

    /// Runs everything due at `now`, earliest first.
    public mutating func handleTimeout(now: Instant) {
        defer { refreshWakeup() }
        while let (timer, at) = firstDue(now: now) {
            switch timer {
            case .probeTimeout: expire(now: at, clock: now)
            case .overdue: followUpIfOverdue(now: now)
            case .deferredProbe: deferredProbeDue(now: now)
            case .scheduledProbe: scheduledProbeDue(now: now)
            }
        }
    }

    // MARK: Internals

    /// At most one forced probe per Timeout: true (the slot taken) when one may go out now,
    /// else false, the probe deferred to a Timeout after the last forced one.
    private mutating func mayForceProbe(now: Instant) -> Bool {
        let timeout = settings.timeout
        if let last = lastForcedProbe, now &- last < timeout {
            deferredProbeAt = last &+ timeout
            return false
        }
        lastForcedProbe = now
        return true
    }

    private mutating func forceProbe(now: Instant) {
        lastForcedProbe = now
        statistics.forced += 1
        sendProbe(now: now, forCheck: true)
    }

    /// With Evidence `traffic`, flowing traffic stands in for the scheduled probe of a host
    /// that answers (ProbeMethod `traffic`); anything else sends it.
    private mutating func scheduledProbeDue(now: Instant) {
        let tick = catchingUp ? nil : nextProbeAt
        catchingUp = false
        guard settings.evidence == .traffic, traffic == .flowing, verdict.answering == true,
            tracker.outstanding.isEmpty
        else {
            nextProbeAt = nil
            sendProbe(now: now, tick: tick)
            return
        }
        statistics.skipped += 1
        owedProbe = true
        nextProbeAt =
            calmNow ? now &+ currentCalmPeriod : ProbeGrid.next(after: now, due: tick, interval: settings.interval)
        answeredBy = .traffic
        publish()
    }

    private mutating func deferredProbeDue(now: Instant) {
        deferredProbeAt = nil
        if tracker.outstanding.isEmpty { forceProbe(now: now) }
    }

    /// `early`: a follow-up beside an overdue probe, off the schedule. `extra`: its loss adds no failure.
    /// `tick`: the schedule's own probe, due then.
    private mutating func sendProbe(
        now: Instant, tick: Instant? = nil, early: Bool = false, extra: Bool = false, forCheck: Bool = false
    ) {
        guard target != nil, !asleep else { return }
        let token = random.next()
        owedProbe = false
        let sequence = tracker.send(token: token, now: now, timeout: settings.timeout, extra: extra)
        statistics.sent += 1
        if !early {
            lastSentAt = now
            catchingUp = false
            nextProbeAt =
                calmNow ? now &+ currentCalmPeriod : ProbeGrid.next(after: now, due: tick, interval: settings.interval)
            // A probe a Check forced gets no follow-up: Checks may add one probe per Timeout, no more.
            if !forCheck { watchForOverdue(sequence, now: now) }
        }
        let ladder = method != nil && method != .tcp && lastSent?.echoReplied != true
        lastSent = (sequence, false)
        outputs.append(.send(sequence: sequence, token: token, forCheck: forCheck, extra: extra, alsoTCP: ladder))
        publish()
    }

    /// While the host answers, a probe with no reply after several round trips is
    /// probably lost: one follow-up goes out then, so that if the host is gone the
    /// suspicion re-probe is already under way. Both probes still get their full
    /// Timeout, and the follow-up's loss is no failure of its own.
    private mutating func watchForOverdue(_ sequence: UInt16, now: Instant) {
        overdue = nil
        guard verdict.answering == true, smoothedRoundTrip > .zero else { return }
        let after = min(max(4 * smoothedRoundTrip, .milliseconds(10)), settings.timeout / 2)
        // The next scheduled probe would go out first (or with it): it serves as the follow-up.
        guard after < settings.interval else { return }
        overdue = (now &+ after, sequence)
    }

    private mutating func followUpIfOverdue(now: Instant) {
        guard let (_, sequence) = overdue else { return }
        overdue = nil
        guard tracker.outstanding[sequence] != nil, verdict.answering == true,
            tracker.outstanding.keys.allSatisfy({ SequenceNumber.distance(from: sequence, to: $0) <= 0 })
        else { return }
        statistics.early += 1
        sendProbe(now: now, early: true, extra: true)
    }

    private mutating func expire(now deadline: Instant, clock now: Instant) {
        for probe in tracker.expire(now: deadline) {
            statistics.lost += 1
            if probe.isExtra {
                // Its silence is the silence of the probe it was sent beside: no second failure.
                outputs.append(.probeFinished)
                if verdict.wantsImmediateProbe && tracker.outstanding.isEmpty { sendProbe(now: now) }
            } else if finishedAsOldNews(probe) {
                // Its loss shows in PacketLoss only.
            } else {
                finish(probe.unprovenFailure ?? .lost, continuing: probe.credit, now: now)
            }
        }
    }

    /// A probe that failed after a probe sent later (or with it) was answered: the answer is the newer
    /// news, so the failure counts in PacketLoss but adds no failure (nor refusal). Finishes the
    /// probe so when it is, and says whether it did.
    private mutating func finishedAsOldNews(_ probe: ProbeTracker.Outstanding) -> Bool {
        guard let answered = newestAnsweredSentAt, probe.sentAt <= answered else { return false }
        verdict.recordOldLoss()
        publish()
        outputs.append(.probeFinished)
        return true
    }

    private mutating func finish(_ outcome: ProbeOutcome, continuing credit: UInt32 = 0, now: Instant) {
        let wasCalm = calmNow
        let decided = verdict.record(outcome, timeoutMilliseconds: settings.timeoutMilliseconds, continuing: credit)
        if decided {
            calm.closeSuspicion()
        } else if case .answered(let rtt) = outcome {
            calm.answered(sentAt: now &- rtt, recoveryThreshold: settings.recoveryThreshold)
        } else {
            calm.openSuspicion(now: now)
        }
        // The first calm probe goes out one calm period after the answer that decided.
        if !wasCalm, calmNow { becameCalm(now: now, from: now) }
        publish()
        outputs.append(.probeFinished)
        // A probe already in flight (an early follow-up) serves as the next one.
        if verdict.wantsImmediateProbe && tracker.outstanding.isEmpty { sendProbe(now: now) }
    }

    /// Calm from now: a probe skipped for flowing traffic while unsure is owed no more (the calm schedule's own
    /// probes are the only ones traffic stands in for now).
    private mutating func becameCalm(now: Instant, from: Instant? = nil) {
        owedProbe = false
        rescheduleCalm(now: now, from: from)
    }

    /// A calm family's next probe: one calm period after `from` (its last probe unless told), never in the past.
    private mutating func rescheduleCalm(now: Instant, from: Instant? = nil) {
        guard target != nil, !asleep else { return }
        nextProbeAt = max(now, (from ?? lastSentAt ?? now) &+ currentCalmPeriod)
    }

    private mutating func publish() {
        var new = report
        new.answering = verdict.answering
        new.roundTripMicroseconds = verdict.roundTripMicroseconds
        new.packetLoss = verdict.packetLoss
        new.failure = verdict.failure
        new.method = method
        new.answeredBy = answeredBy
        new.probesSent = UInt64(statistics.sent)
        new.probesAnswered = UInt64(statistics.answered)
        new.probesSkipped = UInt64(statistics.skipped)
        guard new != report else { return }
        outputs.append(.report(old: report, new: new))
        report = new
    }

    static func unreachableText(_ code: UInt8, family: EchoPacket.Family) -> String {
        switch (family, code) {
        case (.v4, 0): "network unreachable"
        case (.v4, 1): "host unreachable"
        case (.v4, 2): "protocol unreachable"
        case (.v4, 3): "port unreachable"
        case (.v4, 9), (.v4, 10), (.v4, 13): "administratively prohibited"
        case (.v6, 0): "no route"
        case (.v6, 1): "administratively prohibited"
        case (.v6, 3): "address unreachable"
        case (.v6, 4): "port unreachable"
        case (.v6, 5), (.v6, 6): "rejected by policy"
        default: "code \(code)"
        }
    }
}
