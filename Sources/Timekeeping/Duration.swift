/// A length of time in nanoseconds: a Timeout, an Interval, a round trip, a backoff.
///
/// It shadows the standard library's `Duration` in modules that import this one: the cores
/// count nanoseconds in one word, where `Swift.Duration` carries 128 bits through every sum.
/// Its arithmetic traps on overflow and on a negative result, as `UInt64`'s does; `&+` and
/// `&-` wrap where a caller wants that.
public struct Duration: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    @inlinable public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    @inlinable public static func nanoseconds(_ count: some BinaryInteger) -> Duration {
        Duration(nanoseconds: UInt64(count))
    }
    @inlinable public static func microseconds(_ count: some BinaryInteger) -> Duration {
        Duration(nanoseconds: UInt64(count) * 1_000)
    }
    @inlinable public static func milliseconds(_ count: some BinaryInteger) -> Duration {
        Duration(nanoseconds: UInt64(count) * 1_000_000)
    }
    @inlinable public static func seconds(_ count: some BinaryInteger) -> Duration {
        Duration(nanoseconds: UInt64(count) * 1_000_000_000)
    }

    /// `count` microseconds; nil when that is more than a Duration holds (about 584 years): how a number read
    /// from outside becomes one.
    @inlinable public static func microseconds(exactly count: UInt64) -> Duration? {
        let (nanoseconds, overflow) = count.multipliedReportingOverflow(by: 1_000)
        return overflow ? nil : Duration(nanoseconds: nanoseconds)
    }

    public static let zero = Duration(nanoseconds: 0)
    /// Longer than anything waited for: what an unarmed deadline sorts after.
    public static let forever = Duration(nanoseconds: .max)

    /// Whole microseconds, milliseconds, seconds (rounded down).
    @inlinable public var microseconds: UInt64 { nanoseconds / 1_000 }
    @inlinable public var milliseconds: UInt64 { nanoseconds / 1_000_000 }
    @inlinable public var seconds: UInt64 { nanoseconds / 1_000_000_000 }

    @inlinable public static func < (a: Duration, b: Duration) -> Bool { a.nanoseconds < b.nanoseconds }
    @inlinable public static func + (a: Duration, b: Duration) -> Duration {
        Duration(nanoseconds: a.nanoseconds + b.nanoseconds)
    }
    @inlinable public static func - (a: Duration, b: Duration) -> Duration {
        Duration(nanoseconds: a.nanoseconds - b.nanoseconds)
    }
    @inlinable public static func &+ (a: Duration, b: Duration) -> Duration {
        Duration(nanoseconds: a.nanoseconds &+ b.nanoseconds)
    }
    @inlinable public static func &- (a: Duration, b: Duration) -> Duration {
        Duration(nanoseconds: a.nanoseconds &- b.nanoseconds)
    }
    @inlinable public static func += (a: inout Duration, b: Duration) { a = a + b }
    @inlinable public static func &+= (a: inout Duration, b: Duration) { a = a &+ b }
    @inlinable public static func -= (a: inout Duration, b: Duration) { a = a - b }
    @inlinable public static func * (a: Duration, factor: UInt64) -> Duration {
        Duration(nanoseconds: a.nanoseconds * factor)
    }
    @inlinable public static func * (factor: UInt64, a: Duration) -> Duration {
        Duration(nanoseconds: factor * a.nanoseconds)
    }
    @inlinable public static func / (a: Duration, divisor: UInt64) -> Duration {
        Duration(nanoseconds: a.nanoseconds / divisor)
    }
    /// How many whole `b` fit in `a`.
    @inlinable public static func / (a: Duration, b: Duration) -> UInt64 { a.nanoseconds / b.nanoseconds }
    @inlinable public static func % (a: Duration, b: Duration) -> Duration {
        Duration(nanoseconds: a.nanoseconds % b.nanoseconds)
    }

    /// "1.5 s", "250 ms", "40 µs", "0 ns": for logs and violations.
    public var description: String {
        switch nanoseconds {
        case 1_000_000_000...: Self.decimal(nanoseconds, unit: 1_000_000_000, "s")
        case 1_000_000...: Self.decimal(nanoseconds, unit: 1_000_000, "ms")
        case 1_000...: Self.decimal(nanoseconds, unit: 1_000, "µs")
        default: "\(nanoseconds) ns"
        }
    }

    /// `value / unit` with up to three decimals, trailing zeros dropped.
    private static func decimal(_ value: UInt64, unit: UInt64, _ name: String) -> String {
        let thousandths = value % unit / (unit / 1_000)
        guard thousandths > 0 else { return "\(value / unit) \(name)" }
        var fraction = String(thousandths)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return "\(value / unit).\(fraction) \(name)"
    }
}
