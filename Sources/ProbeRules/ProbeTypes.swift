import Timekeeping

/// The probe settings of INTERFACE.md.
public struct ProbeSettings: Equatable, Sendable {
    public var intervalMilliseconds: UInt32
    public var timeoutMilliseconds: UInt32
    public var failureThreshold: UInt32
    public var recoveryThreshold: UInt32
    /// `traffic`: while the machine's own traffic flows, the scheduled probe is skipped.
    public var evidence: Evidence
    /// `adaptive`: at the Interval only while unsure, else once per calm period (`ProbeCalm`); `steady`: every
    /// Interval.
    public var probing: Probing
    /// The calm period's base (INTERFACE.md "Quiet by default"): never shorter than the Interval.
    public var idleIntervalMilliseconds: UInt32

    public init(
        intervalMilliseconds: UInt32 = 1000, timeoutMilliseconds: UInt32 = 1000,
        failureThreshold: UInt32 = 2, recoveryThreshold: UInt32 = 1, evidence: Evidence = .probes,
        probing: Probing = .steady, idleIntervalMilliseconds: UInt32 = 60_000
    ) {
        self.intervalMilliseconds = intervalMilliseconds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.failureThreshold = failureThreshold
        self.recoveryThreshold = recoveryThreshold
        self.evidence = evidence
        self.probing = probing
        self.idleIntervalMilliseconds = idleIntervalMilliseconds
    }

    /// Interval, Timeout and IdleInterval as durations (a millisecond at least).
    public var interval: Duration { .milliseconds(max(intervalMilliseconds, 1)) }
    public var timeout: Duration { .milliseconds(max(timeoutMilliseconds, 1)) }
    public var idleInterval: Duration { .milliseconds(max(idleIntervalMilliseconds, 1)) }
}

/// What the engine says about the host.
public struct ProbeReport: Equatable, Sendable {
    /// nil until the first verdict for the current target.
    public var answering: Bool?
    public var roundTripMicroseconds: UInt64 = 0
    public var packetLoss: Double = 0
    public var failure: ProbeFailure?
    public var reason: String { failure?.text ?? "" }
    public var method: ProbeMethod?
    /// How the host was last heard from (the contract's ProbeMethod); nil before its first answer.
    public var answeredBy: AnswerPath?
    /// Probes sent and answered since the engine started (not reset with the target).
    public var probesSent: UInt64 = 0
    public var probesAnswered: UInt64 = 0
    /// Scheduled probes skipped because traffic flowed (Evidence `traffic`).
    public var probesSkipped: UInt64 = 0

    public init(answering: Bool? = nil) {
        self.answering = answering
    }
}

/// How the host was last heard from: an ICMP echo reply, a TCP connection accepted or refused by
/// the host, or (Evidence `traffic`) this machine's own traffic flowing in its stead.
public enum AnswerPath: String, Sendable, Equatable {
    case icmp, tcp, traffic
}

/// What the probe core counts, for tests, the bench and diagnostics.
public struct ProbeStatistics: Equatable, Sendable {
    public var sent = 0
    public var answered = 0
    public var lost = 0
    public var late = 0
    public var duplicates = 0
    public var foreign = 0
    public var errors = 0
    /// Follow-up probes sent because a probe was overdue.
    public var early = 0
    /// Probes forced by Checks, or by a stall of the machine's own traffic.
    public var forced = 0
    /// Probes forced because the machine's own traffic stalled.
    public var suspicions = 0
    /// Scheduled probes skipped because traffic flowed.
    public var skipped = 0
}

/// The host as the probe core needs it: a name for reasons, and the family of its ICMP codes.
public struct ProbeTarget: Equatable, Sendable {
    public var name: String
    public var family: EchoPacket.Family

    public init(name: String, family: EchoPacket.Family) {
        self.name = name
        self.family = family
    }
}

/// A small, fast, seedable generator (SplitMix64): tokens and first sequence numbers
/// that the simulation can reproduce from one seed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// How the engine probes.
public enum ProbeMethod: String, Sendable, Equatable {
    /// Unprivileged ICMP datagram socket (net.ipv4.ping_group_range).
    case icmpDatagram = "ICMP (datagram socket)"
    /// Raw ICMP socket (CAP_NET_RAW).
    case icmpRaw = "ICMP (raw socket)"
    /// TCP connections to port 443: neither ICMP socket could be opened.
    case tcp = "TCP connect to port 443"
}
