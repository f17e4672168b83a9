import Timekeeping

/// One outage as `GetHistory` returns it (there in microseconds): its start, its duration (time asleep
/// excluded), Blame (its first published value), the worst Connectivity, and Reason.
public struct Outage: Equatable, Sendable {
    public var start: WallTime
    public var duration: Duration
    public var blame: String
    public var worst: Connectivity
    public var reason: String

    public init(start: WallTime, duration: Duration, blame: String, worst: Connectivity, reason: String) {
        self.start = start
        self.duration = duration
        self.blame = blame
        self.worst = worst
        self.reason = reason
    }
}

/// A target's history (INTERFACE.md "History"), without I/O or clocks of its own: the outages, the
/// time in each Connectivity value and asleep. Times come in as readings of CLOCK_BOOTTIME (`boot`,
/// for lengths, so a suspend nobody announced still shows as the jump it is) and CLOCK_REALTIME
/// (`real`, for the start shown). An outage is a period away from `full`, after having been `full`,
/// that lasts at least `minimumOutage`; sleep closes one, and time asleep is never in one nor in
/// any Connectivity value.
public struct OutageHistory: Equatable, Sendable {
    public static let maximumOutages = 1_000
    public static let maximumAge = Duration.seconds(30 * 86_400)
    /// The key of time asleep in `TimeInState`.
    public static let asleep = "asleep"

    /// Oldest first.
    public private(set) var outages: [Outage] = []
    /// The time spent in each Connectivity value (raw value) and asleep, up to `since`: whole seconds.
    public private(set) var spent: [String: Duration] = [:]
    /// When the history began.
    public private(set) var began: WallTime
    /// How many times the list of outages changed (one added, old ones pruned): its file need be written only then.
    public private(set) var outageChanges: UInt64 = 0
    /// A blip shorter than this is no outage (FailureThreshold probes' worth).
    public var minimumOutage: Duration

    // What is going on now; not kept in the file.
    private var current: Connectivity = .unknown
    private var since: BootTime?
    private var asleepSince: BootTime?
    /// Connectivity was `full` since the service started or woke, so leaving it is an outage.
    private var armed = false
    private var running: Running?
    /// Time not yet counted in any value, under a second: each value holds whole seconds, and the
    /// fraction passes on to the next, so the values add up to the whole time and none ever shrinks.
    private var carry = Duration.zero
    /// The whole seconds in `spent`, kept as they are added (see `secondsCounted`).
    private var countedWhole: UInt64 = 0

    private struct Running: Equatable, Sendable {
        var startReal: WallTime
        var startBoot: BootTime
        var asleep = Duration.zero
        var blame = ""
        var worst: Connectivity
        var reason: String
    }

    public init(began: WallTime, minimumOutage: Duration) {
        self.began = began
        self.minimumOutage = minimumOutage
    }

    /// The service started at `boot`: time counts from here (as `unknown` until the first verdict).
    public mutating func observeStart(boot: BootTime) {
        current = .unknown
        since = boot
    }

    /// Whether an outage is under way.
    public var outageUnderway: Bool { running != nil }

    /// The published Connectivity, Blame and Reason at `boot`/`real`; the outage it ended, if any.
    public mutating func observe(
        _ connectivity: Connectivity, blame: Blame?, reason: String, boot: BootTime, real: WallTime
    ) -> Outage? {
        guard asleepSince == nil else { return nil }
        account(boot: boot)
        current = connectivity
        switch connectivity {
        case .full:
            armed = true
            return end(boot: boot)
        case .unknown:
            return nil
        case .none, .limited, .portal:
            if running == nil, armed {
                running = Running(startReal: real, startBoot: boot, worst: connectivity, reason: reason)
            }
            guard var outage = running else { return nil }
            if Self.rank(connectivity) < Self.rank(outage.worst) { outage.worst = connectivity }
            if outage.blame.isEmpty, let blame {
                outage.blame = blame.rawValue
                outage.reason = reason
            }
            running = outage
            return nil
        }
    }

    /// The machine goes to sleep at `boot`: a running outage is closed now (returned when it counts).
    public mutating func suspend(boot: BootTime) -> Outage? {
        guard asleepSince == nil else { return nil }
        account(boot: boot)
        let ended = end(boot: boot)
        asleepSince = boot
        return ended
    }

    /// The machine woke at `boot`: the time since `suspend` was asleep. A fault still there starts a new outage.
    public mutating func resume(boot: BootTime, real: WallTime) {
        guard let start = asleepSince else { return }
        asleepSince = nil
        add(boot.duration(since: start), to: Self.asleep)
        since = boot
        if armed, [.none, .limited, .portal].contains(current) {
            running = Running(startReal: real, startBoot: boot, worst: current, reason: "")
        }
    }

    /// A sleep nobody announced: CLOCK_BOOTTIME ran `duration` ahead of the monotonic clock up to
    /// `boot`. That time moves from the current value (and the running outage) to asleep.
    public mutating func slept(_ duration: Duration, boot: BootTime) {
        guard asleepSince == nil, let start = since else { return }
        let elapsed = boot.duration(since: start)
        let asleep = min(duration, elapsed)
        add(elapsed - asleep, to: current.rawValue)
        add(asleep, to: Self.asleep)
        since = boot
        if var outage = running {
            outage.asleep &+= asleep
            running = outage
        }
    }

    /// Seconds in each Connectivity value and asleep, as of `boot` (every key present).
    public func timeInState(boot: BootTime) -> [(String, UInt64)] {
        var totals = spent
        if let start = asleepSince ?? since {
            totals[asleepSince == nil ? current.rawValue : Self.asleep, default: .zero] &+=
                carry &+ boot.duration(since: start)
        }
        let keys = Connectivity.allCases.map(\.rawValue) + [Self.asleep]
        return keys.map { ($0, (totals[$0] ?? .zero).seconds) }
    }

    /// The sum of `timeInState(boot:)`, in constant time: it changes exactly when one of the values does.
    public func secondsCounted(boot: BootTime) -> UInt64 {
        guard let start = asleepSince ?? since else { return countedWhole }
        return countedWhole &+ (carry &+ boot.duration(since: start)).seconds
    }

    /// The share of time `full` (0…1) among the awake time, as of `boot`; nil before any.
    public func fullShare(boot: BootTime) -> Double? {
        let times = timeInState(boot: boot)
        let awake = times.filter { $0.0 != Self.asleep }.reduce(UInt64(0)) { $0 &+ $1.1 }
        guard awake > 0 else { return nil }
        return Double(times.first { $0.0 == Connectivity.full.rawValue }?.1 ?? 0) / Double(awake)
    }

    /// The last `count` outages, newest first.
    public func latest(_ count: Int) -> [Outage] {
        Array(outages.suffix(max(0, count)).reversed())
    }

    /// Folds the current period into `spent` (before the history is written).
    public mutating func settle(boot: BootTime) {
        guard asleepSince == nil else { return }
        account(boot: boot)
    }

    /// Drops outages beyond the bounds: more than `maximumOutages`, or started over `maximumAge` before `real`.
    public mutating func prune(real: WallTime) {
        let before = outages.count
        if outages.count > Self.maximumOutages { outages.removeFirst(outages.count - Self.maximumOutages) }
        let oldest = real.earlier(by: Self.maximumAge)
        if let keep = outages.firstIndex(where: { $0.start >= oldest }) {
            if keep > 0 { outages.removeFirst(keep) }
        } else {
            outages = []
        }
        if outages.count != before { outageChanges &+= 1 }
    }

    /// Time in state read from a file newer than the one the outages came from (`spent`, the same history's: same
    /// `began`): each value is the larger of the two, as none ever shrinks.
    public mutating func restoreSpent(_ newer: [String: Duration]) {
        for (key, value) in newer where value > spent[key] ?? .zero { spent[key] = value }
        countedWhole = spent.values.reduce(0) { $0 &+ $1.seconds }
    }

    // MARK: Internals

    private mutating func account(boot: BootTime) {
        if let since { add(boot.duration(since: since), to: current.rawValue) }
        since = boot
    }

    private static let second = Duration.seconds(1)

    /// `time` more in `key`: its whole seconds there, the rest carried on.
    private mutating func add(_ time: Duration, to key: String) {
        let pool = carry &+ time
        let whole = pool / Self.second
        spent[key, default: .zero] &+= Self.second * whole
        countedWhole &+= whole
        carry = pool % Self.second
    }

    private mutating func end(boot: BootTime) -> Outage? {
        guard let outage = running else { return nil }
        running = nil
        let elapsed = boot.duration(since: outage.startBoot)
        let duration = elapsed >= outage.asleep ? elapsed - outage.asleep : .zero
        guard duration >= minimumOutage else { return nil }
        let ended = Outage(
            start: outage.startReal, duration: duration, blame: outage.blame, worst: outage.worst,
            reason: OutageHistoryFile.clean(outage.reason))
        outages.append(ended)
        outageChanges &+= 1
        prune(real: outage.startReal)
        return ended
    }

    /// Worse is smaller: none, then limited, then portal.
    private static func rank(_ connectivity: Connectivity) -> Int {
        switch connectivity {
        case .none: 0
        case .limited: 1
        case .portal: 2
        case .full, .unknown: 3
        }
    }

    /// Only `restore` builds a history from a file's parts.
    init(began: WallTime, minimumOutage: Duration, spent: [String: Duration], outages: [Outage]) {
        self.began = began
        self.minimumOutage = minimumOutage
        self.spent = spent
        self.outages = outages
        countedWhole = spent.values.reduce(0) { $0 &+ $1.seconds }
    }
}
