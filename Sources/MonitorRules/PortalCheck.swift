import Timekeeping

/// When the HTTP check of CheckURL runs, and what it last said (INTERFACE.md, "The
/// HTTP check"). Pure: MonitorCore feeds it events and the clock, and carries out
/// the starts and cancellations it asks for.
public struct PortalCheck: Equatable, Sendable {
    /// While Connectivity is `portal` or the check failed: so signing in is noticed within this.
    public static let retry = Duration.seconds(10)
    /// While everything answers as expected.
    public static let refresh = Duration.seconds(300)
    /// However many Sets of CheckURL or flaps of the host ask, checks start at most `burst` at
    /// once and then one per `spacing` (a token bucket): a start asked for with no
    /// token left waits for the next one. Real network changes (a route moved, then moved back)
    /// stay immediate.
    public static let burst = 3
    public static let spacing = Duration.seconds(1)
    /// A check, lookup and connection included, ends within max(5 s, Timeout) (INTERFACE.md).
    public static func limitMilliseconds(timeout: UInt32) -> UInt32 { max(5_000, timeout) }

    public enum Action: Equatable, Sendable {
        case start(url: String, generation: UInt64)
        case cancel
    }

    public private(set) var url = ""
    /// The answer for the current network; nil while its first check runs, or when off.
    public private(set) var meaning: CheckAnswer.Meaning?
    /// The generation of the check under way.
    public private(set) var running: UInt64?
    public private(set) var nextAt: Instant?
    private var generation: UInt64 = 0
    private var tokens = PortalCheck.burst
    /// When the bucket last earned a token (or was last full).
    private var refilledAt = Instant.origin

    public init() {}

    public var isOn: Bool { !url.isEmpty }

    /// CheckURL set: what the old one said is forgotten, and the new one runs at once (unless `starting` is
    /// false: there is nothing to check over yet, and the next `trigger` starts it).
    public mutating func setURL(_ new: String, now: Instant, starting: Bool = true) -> [Action] {
        url = new
        meaning = nil
        nextAt = nil
        var actions: [Action] = running == nil ? [] : [.cancel]
        running = nil
        if isOn && starting { actions += start(now: now) }
        return actions
    }

    /// Something happened that the check should look at again now (the host started or
    /// stopped answering, the route changed). `newNetwork`: what was said is about another network.
    /// On the same network, a check under way already answers for it: it is not started over (each
    /// start opens a connection, and one cancelled before its request is a connection for nothing).
    public mutating func trigger(newNetwork: Bool, now: Instant) -> [Action] {
        if newNetwork { meaning = nil }
        guard isOn, newNetwork || running == nil else { return [] }
        var actions: [Action] = running == nil ? [] : [.cancel]
        running = nil
        actions += start(now: now)
        return actions
    }

    /// Check `generation` answered; false when it was not the one under way.
    public mutating func answered(generation: UInt64, _ answer: CheckAnswer.Meaning, now: Instant) -> Bool {
        guard running == generation else { return false }
        running = nil
        meaning = answer
        nextAt = now &+ (answer == .expected ? Self.refresh : Self.retry)
        return true
    }

    public mutating func handleTimeout(now: Instant) -> [Action] {
        guard let at = nextAt, at <= now, isOn, running == nil else { return [] }
        return start(now: now)
    }

    private mutating func start(now: Instant) -> [Action] {
        refill(now: now)
        guard tokens > 0 else {
            nextAt = refilledAt &+ Self.spacing
            return []
        }
        tokens -= 1
        nextAt = nil
        generation &+= 1
        running = generation
        return [.start(url: url, generation: generation)]
    }

    private mutating func refill(now: Instant) {
        guard tokens < Self.burst else {
            refilledAt = now
            return
        }
        let earned = (now &- refilledAt) / Self.spacing
        guard earned > 0 else { return }
        tokens = min(Self.burst, tokens + Int(min(earned, UInt64(Self.burst))))
        refilledAt = tokens == Self.burst ? now : refilledAt &+ earned * Self.spacing
    }
}
