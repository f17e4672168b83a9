import Timekeeping

// How tests write time. A test's clock starts at `Instant.origin`, and a time is written as a count
// of a unit: `510 * ms` is the instant 510 ms after the origin where an `Instant` is wanted, and
// 510 ms where a `Duration` is. A bare literal is nanoseconds, as the kernel's clocks count.

/// A unit tests count time in.
public struct TimeUnit: Sendable {
    public let duration: Duration
    public init(_ duration: Duration) { self.duration = duration }
}

public let ns = TimeUnit(.nanoseconds(1))
public let ms = TimeUnit(.milliseconds(1))
public let second = TimeUnit(.seconds(1))

public func * (count: UInt64, unit: TimeUnit) -> Duration { unit.duration * count }
public func * (count: UInt64, unit: TimeUnit) -> Instant { .origin + unit.duration * count }

extension Instant: ExpressibleByIntegerLiteral {
    public init(integerLiteral nanoseconds: UInt64) { self.init(nanoseconds: nanoseconds) }
}

extension Duration: ExpressibleByIntegerLiteral {
    public init(integerLiteral nanoseconds: UInt64) { self.init(nanoseconds: nanoseconds) }
}

/// How many whole units: `rtt / ms`, `now / second` (from the origin), for messages.
public func / (duration: Duration, unit: TimeUnit) -> UInt64 { duration / unit.duration }
public func / (instant: Instant, unit: TimeUnit) -> UInt64 { instant.sinceOrigin / unit.duration }
