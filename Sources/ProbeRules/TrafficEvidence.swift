import Timekeeping

/// What this machine's own TCP traffic says about the route to Host (INTERFACE.md, "Traffic as evidence").
public enum Traffic: String, CaseIterable, Sendable {
    /// No route: nothing is watched.
    case none = ""
    case idle, flowing, stalled
}

/// Whether flowing traffic may stand in for the scheduled probe.
public enum Evidence: String, CaseIterable, Sendable {
    case probes, traffic
}

/// One sample of the established TCP connections whose source address is on the route's
/// interface, reduced to counts: no address, port or size of any connection.
public struct TrafficSample: Equatable, Sendable {
    /// Connections the kernel's filter let through (any remote).
    public var connections: Int
    /// Different remotes routed like Host that sent data within the last second.
    public var receivingRemotes: Int
    /// Different remotes routed like Host with data being retransmitted to them.
    public var retransmittingRemotes: Int

    public init(connections: Int = 0, receivingRemotes: Int = 0, retransmittingRemotes: Int = 0) {
        self.connections = connections
        self.receivingRemotes = receivingRemotes
        self.retransmittingRemotes = retransmittingRemotes
    }

    /// Data in from any remote routed like Host is `flowing`, whatever else stalls; retransmissions to
    /// two remotes or more with nothing in is `stalled`; anything else `idle`.
    public var traffic: Traffic {
        if receivingRemotes > 0 { return .flowing }
        return retransmittingRemotes >= TrafficWatch.stalledRemotes ? .stalled : .idle
    }
}

/// When to sample this machine's connections, and the word the last sample gave. Pure.
///
/// While there is a route, a sample every 500 ms while connections exist, else every 5 s or at
/// the next probe when that is sooner but not sooner than 500 ms (a wake-up the schedule has
/// anyway). Never more than 1 % of a core: a sample that cost c waits at least 125 c for the
/// next (0.8 %, the rest for handing samples over).
public struct TrafficWatch: Sendable {
    public static let busyPeriod = Duration.milliseconds(500)
    public static let quietPeriod = Duration.seconds(5)
    /// 1 / the share of a core sampling may take.
    public static let costFactor: UInt64 = 125
    /// A sample that cost less than this runs on the loop; a dearer one on the sampler's thread. The kernel
    /// walks its whole table of established sockets for each dump, 1–3 ms on a large machine however few
    /// sockets there are; on the loop that is one wake-up per sample instead of two, and a tenth of a turn's 50 ms.
    public static let inlineCost = Duration.milliseconds(5)
    public static let stalledRemotes = 2

    public private(set) var traffic: Traffic = .none
    /// Whether there is a path (Host's address over a usable route) to watch.
    public private(set) var watching = false
    public private(set) var nextSampleAt: Instant?
    /// `flowing` says data came within the last second: past this, without a newer sample, it is `idle`.
    public private(set) var flowingUntil: Instant?
    public static let evidenceLifetime = Duration.seconds(1)
    /// Bumped with every new path: a sample taken for an older one is dropped.
    public private(set) var generation: UInt64 = 0
    private var inFlight = false
    private var lastCost: Duration?

    public init() {}

    /// The path changed: a new one (`watching`) starts at `idle` and is sampled at once; without
    /// one (no route) nothing is sampled. Returns whether the word changed.
    public mutating func pathChanged(watching: Bool, now: Instant) -> Bool {
        self.watching = watching
        generation &+= 1
        inFlight = false
        nextSampleAt = watching ? now : nil
        flowingUntil = nil
        let old = traffic
        traffic = watching ? .idle : .none
        return traffic != old
    }

    /// A sample is due: take it (the caller samples `generation`); nil when none is due or one is under way.
    /// `inline`: cheap enough to take on the loop.
    public mutating func takeDueSample(now: Instant) -> (generation: UInt64, inline: Bool)? {
        guard watching, !inFlight, let at = nextSampleAt, at <= now else { return nil }
        inFlight = true
        nextSampleAt = nil
        return (generation, (lastCost ?? .forever) < Self.inlineCost)
    }

    /// Sample `generation` came back, having cost `cost` of CPU time. `nextProbe`: when the schedule
    /// probes next. Returns whether the word changed.
    public mutating func sampled(
        generation: UInt64, _ sample: TrafficSample, cost: Duration, nextProbe: Instant?,
        now: Instant
    ) -> Bool {
        guard generation == self.generation, inFlight else { return false }
        inFlight = false
        lastCost = cost
        let base = sample.connections > 0 ? Self.busyPeriod : Self.quietPeriod
        var next =
            now
            &+ max(
                base,
                Duration(nanoseconds: cost.nanoseconds.multipliedReportingOverflow(by: Self.costFactor).partialValue))
        // A probe's wake-up serves, unless it is sooner than a busy sample would be.
        if sample.connections == 0, let probe = nextProbe, probe >= now &+ Self.busyPeriod, probe < next {
            next = probe
        }
        nextSampleAt = next
        let old = traffic
        traffic = sample.traffic
        flowingUntil = traffic == .flowing ? now &+ Self.evidenceLifetime : nil
        return traffic != old
    }

    /// When the next thing is due: a sample, or the end of a `flowing` word's second.
    public var nextWakeup: Instant? {
        guard let sample = nextSampleAt else { return flowingUntil }
        guard let until = flowingUntil else { return sample }
        return min(sample, until)
    }

    /// A `flowing` word older than a second, with no newer sample (samples are dear): `idle`.
    /// Returns whether the word changed.
    public mutating func expire(now: Instant) -> Bool {
        guard let until = flowingUntil, until <= now, traffic == .flowing else { return false }
        flowingUntil = nil
        traffic = .idle
        return true
    }

    /// A sample could not be taken (the kernel refused, a socket failed): try again as if it had found nothing.
    public mutating func sampleFailed(generation: UInt64, nextProbe: Instant?, now: Instant) -> Bool {
        sampled(generation: generation, TrafficSample(), cost: lastCost ?? .zero, nextProbe: nextProbe, now: now)
    }
}
