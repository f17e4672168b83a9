import Timekeeping

/// How one probe ended.
public enum ProbeOutcome: Equatable, Sendable {
    case answered(roundTrip: Duration)
    /// No valid reply within Timeout.
    case lost
    /// ICMP Time Exceeded about our probe: counts as one failed probe.
    case timeExceeded(from: String)
    /// An ICMP Destination Unreachable that quotes too little of our probe to prove it is about
    /// it (no token), and no reply by the deadline: one failed probe, never a refusal; silence
    /// as far as the schedule goes (the error proved nothing).
    case unproven(from: String)
    /// The network said no (ICMP Destination Unreachable, or the send failed): not answering at once.
    case refused(reason: String)
}

/// Why the host counts as not answering: Reason's words for it, kept typed so that a family's line
/// (Reason4/6: "host not answering over IPv6: …") and the late-reply rule never read them back.
public enum ProbeFailure: Equatable, Sendable {
    /// Probes went unanswered, `probes` in a row.
    case silent(Silence, probes: UInt32)
    /// Replies came, but after Timeout.
    case tooSlow(timeoutMilliseconds: UInt32, probes: UInt32)
    /// The network said no, in these words.
    case refused(String)

    public enum Silence: Equatable, Sendable {
        case lost
        /// Time Exceeded came back from a router on the way.
        case timeExceeded(at: String)
        /// Destination Unreachable errors that quote too little of the probe to prove anything.
        case unproven(from: String)
    }

    /// What follows "host not answering" for a silence; nil for the others.
    public var silenceDetail: String? {
        guard case .silent(let silence, let probes) = self else { return nil }
        return switch silence {
        case .lost: "\(probes) probes lost"
        case .timeExceeded(let router): "time exceeded at \(router) (\(probes) probes lost)"
        case .unproven(let sender):
            "\(probes) probes failed (ICMP errors from \(sender) that quote too little to be verified)"
        }
    }

    /// The line, as Reason says it.
    public var text: String {
        switch self {
        case .silent: "host not answering: " + (silenceDetail ?? "")
        case .tooSlow(let timeout, let probes): "host too slow: no reply within \(timeout) ms (\(probes) probes)"
        case .refused(let why): why
        }
    }
}

/// Answering or not, with FailureThreshold / RecoveryThreshold hysteresis,
/// PacketLoss over the last 20 probes, and the last round trip. Pure.
public struct ProbeVerdict: Equatable, Sendable {
    public var failureThreshold: UInt32
    public var recoveryThreshold: UInt32
    /// nil until the first verdict for the current target.
    public private(set) var answering: Bool?
    public private(set) var consecutiveFailures: UInt32 = 0
    public private(set) var consecutiveAnswers: UInt32 = 0
    public private(set) var roundTripMicroseconds: UInt64 = 0
    /// Why the host is not answering; nil while it answers or before a verdict.
    public private(set) var failure: ProbeFailure?
    public var reason: String { failure?.text ?? "" }
    private var history: [Bool] = []
    private var tooSlow = false
    /// Whether the last failure was silence (a lost probe) rather than an ICMP answer.
    private var lastFailureWasSilence = false
    /// Set when a route came back: recovery probes then go back to back.
    public var recoveringBackToBack = false
    public static let window = 20

    public init(failureThreshold: UInt32, recoveryThreshold: UInt32) {
        self.failureThreshold = failureThreshold
        self.recoveryThreshold = recoveryThreshold
    }

    /// Share of the last 20 probes that failed.
    public var packetLoss: Double {
        history.isEmpty ? 0 : Double(history.filter { !$0 }.count) / Double(history.count)
    }

    /// True when the next probe should go out now rather than at the next tick:
    /// silence while still answering (suspicion), or recovery after a route came back.
    /// A failure the network answered (Time Exceeded) has no silence to confirm: the next
    /// probe waits for its tick. An unproven Unreachable is silence (it came with no reply).
    public var wantsImmediateProbe: Bool {
        if answering == true && consecutiveFailures > 0 && lastFailureWasSilence { return true }
        return answering == false && recoveringBackToBack && consecutiveAnswers > 0
    }

    /// Records a probe's end; returns true when `answering` changed.
    @discardableResult
    /// `continuing`: failures of another family this probe's silence continues (see `ProbeTracker.Outstanding.credit`).
    public mutating func record(
        _ outcome: ProbeOutcome, timeoutMilliseconds: UInt32, continuing credit: UInt32 = 0
    ) -> Bool {
        let before = answering
        switch outcome {
        case .answered(let rtt):
            push(true)
            roundTripMicroseconds = rtt.microseconds
            consecutiveFailures = 0
            consecutiveAnswers = consecutiveAnswers.saturatingSuccessor
            tooSlow = false
            // The first verdict for a target needs one answer; a recovery needs RecoveryThreshold.
            if answering == nil || (answering == false && consecutiveAnswers >= recoveryThreshold) {
                answering = true
                recoveringBackToBack = false
            }
        case .lost, .timeExceeded, .unproven:
            push(false)
            consecutiveAnswers = 0
            consecutiveFailures = max(consecutiveFailures, credit).saturatingSuccessor
            if case .unproven = outcome {
                lastFailureWasSilence = true
            } else {
                lastFailureWasSilence = outcome == .lost
            }
            if answering != false && consecutiveFailures >= failureThreshold { answering = false }
            if answering == false {
                if case .timeExceeded(let router) = outcome {
                    failure = .silent(.timeExceeded(at: router), probes: consecutiveFailures)
                } else if case .unproven(let sender) = outcome {
                    failure = .silent(.unproven(from: sender), probes: consecutiveFailures)
                } else if tooSlow {
                    failure = .tooSlow(timeoutMilliseconds: timeoutMilliseconds, probes: consecutiveFailures)
                } else {
                    failure = .silent(.lost, probes: consecutiveFailures)
                }
            }
        case .refused(let why):
            push(false)
            consecutiveAnswers = 0
            consecutiveFailures = consecutiveFailures.saturatingSuccessor
            answering = false
            failure = .refused(why)
        }
        if answering == true { failure = nil }
        return answering != before
    }

    /// A probe lost after a probe sent later was answered: it counts in PacketLoss only.
    public mutating func recordOldLoss() {
        push(false)
    }

    /// A reply came for a probe already counted lost: the host is slow, not silent.
    public mutating func noteLateReply(timeoutMilliseconds: UInt32) {
        tooSlow = true
        guard answering == false, case .silent(let silence, _)? = failure else { return }
        if case .timeExceeded = silence { return }
        failure = .tooSlow(timeoutMilliseconds: timeoutMilliseconds, probes: consecutiveFailures)
    }

    /// The machine slept: the streaks before it say nothing about the network after it (the verdict and
    /// PacketLoss stay). Failures and answers toward a change count afresh from the resume.
    public mutating func startStreaksAfresh() {
        consecutiveFailures = 0
        consecutiveAnswers = 0
        lastFailureWasSilence = false
    }

    /// A new target: no verdict, no history.
    public mutating func reset() {
        self = ProbeVerdict(failureThreshold: failureThreshold, recoveryThreshold: recoveryThreshold)
    }

    private mutating func push(_ answered: Bool) {
        history.append(answered)
        if history.count > Self.window { history.removeFirst(history.count - Self.window) }
    }
}

private extension UInt32 {
    /// One more, staying at the maximum instead of trapping (a host silent for years).
    var saturatingSuccessor: UInt32 { self == .max ? self : self + 1 }
}
