import Timekeeping

/// The probes in flight, matched by sequence and token. RTTs come only from
/// our own monotonic send times, never from anything in a packet.
public struct ProbeTracker: Sendable {
    public struct Outstanding: Equatable, Sendable {
        public let sequence: UInt16
        public let token: UInt64
        public let sentAt: Instant
        public let deadline: Instant
        /// Sent early beside a probe that counts: its loss is not a failure of its own.
        public let isExtra: Bool
        /// An ICMP error that quotes too little to be verified named this probe: how it failed if no
        /// reply comes by its deadline (a reply still wins).
        public internal(set) var unprovenFailure: ProbeOutcome? = nil
        /// Failures this probe's silence continues (another family's, at its suspicion): if it is lost,
        /// the failures in a row are at least these plus one.
        public internal(set) var credit: UInt32 = 0
    }

    public enum ReplyOutcome: Equatable, Sendable {
        case answered(sequence: UInt16, roundTrip: Duration)
        /// Ours, but after its timeout had already counted it lost.
        case late(sequence: UInt16)
        case duplicate
        /// Unknown sequence or wrong token: someone else's, or forged.
        case foreign
    }

    /// The tokens of the last few probes that finished one way, oldest forgotten first.
    struct Recent: Sendable {
        private var tokens: [UInt16: UInt64] = [:]
        private var order: [UInt16] = []
        static let capacity = 64

        subscript(sequence: UInt16) -> UInt64? { tokens[sequence] }

        mutating func insert(_ sequence: UInt16, _ token: UInt64) {
            tokens[sequence] = token
            order.append(sequence)
            if order.count > Self.capacity * 2 {
                order = order.filter { tokens[$0] != nil }
                while order.count > Self.capacity { tokens[order.removeFirst()] = nil }
            }
        }

        mutating func remove(_ sequence: UInt16) {
            tokens[sequence] = nil
        }
    }

    public private(set) var outstanding: [UInt16: Outstanding] = [:]
    private var expired = Recent()
    private var answered = Recent()
    private var nextSequence: UInt16
    /// Sequences go up by this much: a tracker sharing a socket with others keeps to its own
    /// residue class (a power of two, so the classes survive the wrap at 65,536).
    private let stride: UInt16

    public init(firstSequence: UInt16 = .random(in: 0...UInt16.max), stride: UInt16 = 1) {
        nextSequence = firstSequence
        self.stride = max(stride, 1)
    }

    /// Records a probe sent at `now`; returns its sequence number.
    public mutating func send(token: UInt64, now: Instant, timeout: Duration, extra: Bool = false) -> UInt16 {
        let sequence = nextSequence
        nextSequence &+= stride
        // A sequence 65,536 probes old may still be remembered; the new probe replaces it.
        forget(sequence)
        outstanding[sequence] = Outstanding(
            sequence: sequence, token: token, sentAt: now, deadline: now &+ timeout, isExtra: extra)
        return sequence
    }

    /// Matches a reply by sequence and token.
    public mutating func reply(sequence: UInt16, token: UInt64, now: Instant) -> ReplyOutcome {
        if let probe = outstanding[sequence] {
            guard probe.token == token else { return .foreign }
            outstanding[sequence] = nil
            answered.insert(sequence, token)
            return .answered(sequence: sequence, roundTrip: now.duration(since: probe.sentAt))
        }
        if answered[sequence] == token { return .duplicate }
        if let expiredToken = expired[sequence], expiredToken == token {
            expired.remove(sequence)
            return .late(sequence: sequence)
        }
        return .foreign
    }

    /// Matches an ICMP error about a probe; a quoted token, when present, must be ours.
    /// Returns the probe it finished, or nil when the error is not about an outstanding probe.
    public mutating func error(sequence: UInt16, token: UInt64?) -> Outstanding? {
        guard let probe = outstanding[sequence], token == nil || token == probe.token else { return nil }
        outstanding[sequence] = nil
        return probe
    }

    /// An error that cannot be verified (no token) names probe `sequence`: it keeps waiting for its reply,
    /// and fails as `outcome` says only if none comes. Returns false when no such probe is in flight.
    public mutating func noteUnproven(sequence: UInt16, _ outcome: ProbeOutcome) -> Bool {
        guard outstanding[sequence] != nil else { return false }
        outstanding[sequence]?.unprovenFailure = outcome
        return true
    }

    /// Probe `sequence` continues `failures` of another family's: see `Outstanding.credit`.
    public mutating func credit(_ sequence: UInt16, _ failures: UInt32) {
        outstanding[sequence]?.credit = failures
    }

    /// No probe in flight continues another family's failures any longer.
    public mutating func withdrawCredit() {
        for (sequence, probe) in outstanding where probe.credit > 0 { outstanding[sequence]?.credit = 0 }
    }

    /// Removes and returns the probes whose deadline has passed.
    public mutating func expire(now: Instant) -> [Outstanding] {
        let due = outstanding.values.filter { $0.deadline <= now }.sorted { $0.sentAt < $1.sentAt }
        for probe in due {
            outstanding[probe.sequence] = nil
            expired.insert(probe.sequence, probe.token)
        }
        return due
    }

    public var nextDeadline: Instant? {
        var earliest: Instant?
        for probe in outstanding.values where probe.deadline < earliest ?? .distantFuture { earliest = probe.deadline }
        return earliest
    }

    /// Forgets everything (a new target).
    public mutating func reset() {
        outstanding = [:]
        expired = Recent()
        answered = Recent()
    }

    private mutating func forget(_ sequence: UInt16) {
        outstanding[sequence] = nil
        expired.remove(sequence)
        answered.remove(sequence)
    }
}
