import NetAddress
import ProbeRules
import Timekeeping

/// One target's DNS truth without I/O (INTERFACE.md "DNS truth"): when to ask Host's name past the
/// caches (and a random label under DnsProbeZone with it), when to ask a random label under
/// `invalid.`, and what the answers make of `Dns`. Events come in with `now`; questions come out.
/// At most one fresh lookup is in flight, and one interception query.
public struct DnsTruthCore: TimerTable {
    public enum Output: Equatable, Sendable {
        /// Ask `question`; answer with `answered(generation:…)`.
        case ask(DnsQuestion, generation: UInt64)
        /// `view` changed.
        case changed
    }

    public enum Timer: CaseIterable, Hashable, Sendable {
        /// The next fresh lookup: the 5-minute one while full, or the retry after a failure.
        case fresh
        /// The interception query again on the same network (hourly).
        case interception
    }

    /// Fresh lookups while full.
    public static let refresh = Duration.seconds(300)
    /// A failed fresh lookup is asked again after this; no two fresh lookups start closer together.
    public static let retry = Duration.seconds(5)
    public static let interceptionRefresh = Duration.seconds(3600)
    /// An interception query nobody answered is asked again this much later.
    public static let interceptionRetry = Duration.seconds(60)
    /// Answers slower than this are `slow`.
    public static let slowAfter = Duration.seconds(1)
    /// Failed fresh lookups in a row that make `failing`.
    public static let failuresToFail = 2

    public private(set) var host: String
    public private(set) var hostIsLiteral: Bool
    public private(set) var family: AddressFamily
    public private(set) var zone: String
    public private(set) var view = DnsView()
    /// Failed fresh lookups in a row.
    public private(set) var failures = 0
    public private(set) var generation: UInt64 = 0
    private var random: SeededRandom
    private var started = false
    private var full = false
    /// The fresh lookup under way: its questions not answered yet, and what the answered ones said.
    private var waiting: Set<DnsQuestionKind> = []
    /// The first failed question of the lookup under way: which, and why.
    private var roundFailure: (kind: DnsQuestionKind, why: String)?
    private var roundReply: DnsReply?
    private var lastFreshStart: Instant?
    private var freshAt: Instant?
    private var interceptionAt: Instant?
    private var interceptionAsked = false
    /// When the interception query was last asked: a Set never asks it again sooner than `retry` after.
    private var lastInterceptionStart: Instant?
    /// When the last Set's fresh lookup was due: Sets ask at once, but no sooner than `retry` after the last one.
    private var lastSetLookup: Instant?
    /// The network the route to Host is on, as the driver names it ("" while there is none).
    public private(set) var network = ""
    /// The nameservers the last answer said were asked.
    public private(set) var resolvers: [String] = []
    private var intercepted: Bool?
    private var unencrypted = false
    /// A fresh lookup succeeded since Host was set.
    private var answeredFresh = false
    private var outputs: [Output] = []

    public init(host: String, hostIsLiteral: Bool, family: AddressFamily, zone: String, seed: UInt64) {
        self.host = host
        self.hostIsLiteral = hostIsLiteral
        self.family = family
        self.zone = zone
        random = SeededRandom(seed: seed)
    }

    public mutating func takeOutputs() -> [Output] {
        defer { outputs = [] }
        return outputs
    }

    public func deadline(_ timer: Timer) -> Instant? {
        switch timer {
        case .fresh: waiting.isEmpty ? freshAt : nil
        case .interception: interceptionAsked ? nil : interceptionAt
        }
    }

    public var nextWakeup: Instant? { earliestDeadline }

    /// Whether a fresh lookup has anything to ask: Host's name, or a label under the probe zone.
    private var asksFresh: Bool { !hostIsLiteral || !zone.isEmpty }

    // MARK: Events

    /// The target is exported: a fresh lookup and the interception query at once.
    public mutating func start(network: String, now: Instant) {
        started = true
        self.network = network
        due(now: now)
        interceptionAt = now
        run(now: now)
    }

    /// Host, AddressFamily or DnsProbeZone changed: a fresh lookup at once — the Sets' own no sooner than `retry`
    /// after the last Set's, however many come (issue 54 N31). A new Host or family forgets what was known of the old
    /// one; a new zone only asks under it from now on.
    public mutating func settingsChanged(
        host: String, hostIsLiteral: Bool, family: AddressFamily, zone: String, now: Instant
    ) {
        guard host != self.host || family != self.family || zone != self.zone else { return }
        let newTarget = host != self.host || family != self.family
        self.host = host
        self.hostIsLiteral = hostIsLiteral
        self.family = family
        self.zone = zone
        generation &+= 1
        waiting = []
        failures = 0
        let interceptionDue = lastInterceptionStart.map { max(now, $0 + Self.retry) } ?? now
        if newTarget {
            unencrypted = false
            answeredFresh = false
            view = DnsView()
            interceptionAsked = false
            interceptionAt = interceptionDue
        } else if interceptionAsked {
            // The question under way belongs to the old generation: asked again.
            interceptionAsked = false
            interceptionAt = interceptionDue
        }
        if asksFresh {
            let at = lastSetLookup.map { max(now, $0 + Self.retry) } ?? now
            lastSetLookup = at
            freshAt = min(freshAt ?? at, at)
        }
        refreshView()
        run(now: now)
    }

    /// The route to Host now goes through `network` (its interface; "" none): on a change, a fresh
    /// lookup (no sooner than `retry` after the last) and the interception query.
    public mutating func routeChanged(network: String, now: Instant) {
        guard started, network != self.network else { return }
        self.network = network
        // What the old network's resolver did says nothing of the new one's.
        intercepted = nil
        if !network.isEmpty {
            interceptionAt = now
            due(now: now)
        }
        refreshView()
        run(now: now)
    }

    /// After resume, or when the host stops answering: a fresh lookup (no sooner than `retry` after the last).
    public mutating func lookAgain(now: Instant) {
        guard started else { return }
        due(now: now)
        run(now: now)
    }

    /// Whether Connectivity is `full`: only then does the 5-minute fresh lookup run.
    public mutating func connectivityFull(_ full: Bool, now: Instant) {
        guard full != self.full else { return }
        self.full = full
        if full, failures == 0, freshAt == nil, let last = lastFreshStart {
            freshAt = last + Self.refresh
        }
    }

    /// Question `kind` of lookup `generation` was answered (a stale generation is ignored).
    public mutating func answered(_ kind: DnsQuestionKind, generation: UInt64, _ reply: DnsReply, now: Instant) {
        guard generation == self.generation else { return }
        noteResolvers(reply.resolvers, now: now)
        if kind == .interception {
            guard interceptionAsked else { return }
            interceptionAsked = false
            interceptionAt = now + Self.interceptionRefresh
            if case .noAnswer = reply.outcome { interceptionAt = now + Self.interceptionRetry }
            switch reply.outcome {
            case .addresses:
                intercepted = true
            case .nxdomain, .noData:
                intercepted = false
            default:
                // No answer says nothing of interception; a fresh lookup's failures speak for the resolver.
                break
            }
            if !asksFresh { takeServer(reply) }
            refreshView()
            run(now: now)
            return
        }
        guard waiting.remove(kind) != nil else { return }
        if let why = failure(of: kind, reply) {
            if roundFailure == nil { roundFailure = (kind, why) }
        } else if kind == .host || roundReply == nil {
            roundReply = reply
        }
        if kind == .host || hostIsLiteral { takeServer(reply) }
        guard waiting.isEmpty else { return }
        finishRound(now: now)
        run(now: now)
    }

    public mutating func timeout(now: Instant) {
        run(now: now)
    }

    // MARK: Rules

    /// Why `reply` to question `kind` is a failure of the resolver path; nil when it is not.
    private func failure(of kind: DnsQuestionKind, _ reply: DnsReply) -> String? {
        switch (kind, reply.outcome) {
        case (_, .servfail), (_, .refused), (_, .noAnswer), (_, .otherRcode): reply.outcome.words
        case (.host, .nxdomain): reply.outcome.words
        default: nil
        }
    }

    /// Who answered, how and how fast (a question nobody answered says nothing of that).
    private mutating func takeServer(_ reply: DnsReply) {
        if case .noAnswer = reply.outcome { return }
        guard !reply.server.isEmpty else { return }
        view.server = reply.server
        view.transport = reply.transport
        view.roundTripTime = UInt64(clamping: reply.roundTrip.nanoseconds / 1000)
    }

    private mutating func finishRound(now: Instant) {
        if let (kind, why) = roundFailure {
            failures += 1
            let name = kind == .host ? host : "names under \(zone)"
            view.failure = "DNS fails: new lookups of \(name): \(why) (cached answers may still work)"
            // One lookup per `retry` while failing, start to start: a lookup that timed out is asked again at once.
            freshAt = max(now, (lastFreshStart ?? now) + Self.retry)
        } else {
            failures = 0
            answeredFresh = true
            view.failure = nil
            if let reply = roundReply {
                unencrypted = reply.encryptionExpected && reply.transport != .tls
            }
            freshAt = full ? now + Self.refresh : nil
        }
        refreshView()
    }

    /// A changed resolver list is a network change: interception is asked again.
    private mutating func noteResolvers(_ list: [String], now: Instant) {
        guard !list.isEmpty, list != resolvers else { return }
        let known = !resolvers.isEmpty
        resolvers = list
        if known {
            interceptionAt = now
            intercepted = nil
        }
    }

    /// A fresh lookup is due at once, or `retry` after the last one began.
    private mutating func due(now: Instant) {
        guard asksFresh else { return }
        let earliest = lastFreshStart.map { $0 + Self.retry } ?? now
        freshAt = max(now, earliest)
    }

    private mutating func refreshView() {
        let old = view
        let failing = failures >= Self.failuresToFail
        if !failing { view.failure = nil }
        let slow = view.roundTripTime > UInt64(Self.slowAfter.nanoseconds / 1000)
        view.health =
            if failing {
                .failing
            } else if intercepted == true {
                .intercepted
            } else if unencrypted {
                .unencrypted
            } else if asksFresh ? !answeredFresh : intercepted == nil {
                .unknown
            } else if slow && asksFresh {
                .slow
            } else {
                .ok
            }
        if view != old { outputs.append(.changed) }
    }

    /// Asks what is due.
    private mutating func run(now: Instant) {
        if waiting.isEmpty, let at = freshAt, at <= now, asksFresh {
            freshAt = nil
            lastFreshStart = now
            roundFailure = nil
            roundReply = nil
            let family = questionFamily
            if !hostIsLiteral {
                waiting.insert(.host)
                outputs.append(.ask(DnsQuestion(kind: .host, name: host, family: family), generation: generation))
            }
            if !zone.isEmpty {
                waiting.insert(.probeZone)
                outputs.append(
                    .ask(
                        DnsQuestion(kind: .probeZone, name: label(under: zone), family: family), generation: generation)
                )
            }
        }
        if !interceptionAsked, let at = interceptionAt, at <= now {
            interceptionAsked = true
            lastInterceptionStart = now
            outputs.append(
                .ask(
                    DnsQuestion(kind: .interception, name: label(under: "invalid."), family: questionFamily),
                    generation: generation))
        }
    }

    /// A: the A record says whether the resolver answers; AAAA only for an IPv6-only target.
    private var questionFamily: IPFamily { family == .ipv6 ? .v6 : .v4 }

    /// A random 16-hex-digit label under `zone`.
    private mutating func label(under zone: String) -> String {
        let value = random.next()
        var digits = String(value, radix: 16)
        digits = String(repeating: "0", count: 16 - digits.count) + digits
        let suffix = zone.hasSuffix(".") ? zone : zone + "."
        return digits + "." + suffix
    }
}
