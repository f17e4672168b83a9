/// A moment on the loop's monotonic clock (CLOCK_MONOTONIC in the daemon, a virtual clock in
/// tests and the simulation), in nanoseconds from the clock's origin. Instants are compared and
/// subtracted; only a `Duration` is added to one.
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    @inlinable public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The clock's origin: where a virtual clock starts.
    public static let origin = Instant(nanoseconds: 0)
    /// After every deadline: what "never" sorts as.
    public static let distantFuture = Instant(nanoseconds: .max)

    /// The time since the origin.
    @inlinable public var sinceOrigin: Duration { Duration(nanoseconds: nanoseconds) }

    /// The time from `earlier` to this instant; zero when `earlier` is not earlier.
    @inlinable public func duration(since earlier: Instant) -> Duration {
        Duration(nanoseconds: nanoseconds > earlier.nanoseconds ? nanoseconds - earlier.nanoseconds : 0)
    }

    @inlinable public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }
    @inlinable public static func + (a: Instant, b: Duration) -> Instant {
        Instant(nanoseconds: a.nanoseconds + b.nanoseconds)
    }
    @inlinable public static func - (a: Instant, b: Duration) -> Instant {
        Instant(nanoseconds: a.nanoseconds - b.nanoseconds)
    }
    @inlinable public static func &+ (a: Instant, b: Duration) -> Instant {
        Instant(nanoseconds: a.nanoseconds &+ b.nanoseconds)
    }
    @inlinable public static func &- (a: Instant, b: Duration) -> Instant {
        Instant(nanoseconds: a.nanoseconds &- b.nanoseconds)
    }
    @inlinable public static func += (a: inout Instant, b: Duration) { a = a + b }
    /// The time from `b` to `a`; traps when `b` is later, as `UInt64`'s subtraction does.
    @inlinable public static func - (a: Instant, b: Instant) -> Duration {
        Duration(nanoseconds: a.nanoseconds - b.nanoseconds)
    }
    @inlinable public static func &- (a: Instant, b: Instant) -> Duration {
        Duration(nanoseconds: a.nanoseconds &- b.nanoseconds)
    }

    public var description: String { "\(sinceOrigin) from origin" }
}
