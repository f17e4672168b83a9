/// A reading of CLOCK_BOOTTIME: monotonic, and counting the time the machine was suspended. What users
/// are shown as a length (an outage's, TimeInState) is measured on it, so a sleep nobody announced still
/// shows as the jump it is. Not comparable with an `Instant` (the loop's clock stops while asleep).
public struct BootTime: Hashable, Comparable, Sendable {
    public var sinceBoot: Duration

    @inlinable public init(sinceBoot: Duration) { self.sinceBoot = sinceBoot }

    /// The time from `earlier` to this reading; zero when `earlier` is not earlier.
    @inlinable public func duration(since earlier: BootTime) -> Duration {
        sinceBoot > earlier.sinceBoot ? sinceBoot - earlier.sinceBoot : .zero
    }

    @inlinable public static func < (a: BootTime, b: BootTime) -> Bool { a.sinceBoot < b.sinceBoot }
    @inlinable public static func + (a: BootTime, b: Duration) -> BootTime { BootTime(sinceBoot: a.sinceBoot + b) }
}

/// A reading of CLOCK_REALTIME: when something happened, as users are shown it (microseconds since the
/// Unix epoch on D-Bus and in the history file). It may jump either way; nothing is measured on it.
public struct WallTime: Hashable, Comparable, Sendable {
    public var sinceEpoch: Duration

    @inlinable public init(sinceEpoch: Duration) { self.sinceEpoch = sinceEpoch }

    /// Whole microseconds since the epoch, as D-Bus and the history file carry it.
    @inlinable public var microseconds: UInt64 { sinceEpoch.microseconds }
    @inlinable public init(microseconds: UInt64) { sinceEpoch = .microseconds(microseconds) }

    /// `duration` earlier; the epoch when that would be before it.
    @inlinable public func earlier(by duration: Duration) -> WallTime {
        WallTime(sinceEpoch: sinceEpoch > duration ? sinceEpoch - duration : .zero)
    }

    @inlinable public static func < (a: WallTime, b: WallTime) -> Bool { a.sinceEpoch < b.sinceEpoch }
    @inlinable public static func + (a: WallTime, b: Duration) -> WallTime { WallTime(sinceEpoch: a.sinceEpoch + b) }
}
