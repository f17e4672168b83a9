import Glibc
import Timekeeping

/// The clocks the service reads: CLOCK_MONOTONIC as an Instant, CLOCK_BOOTTIME as a BootTime,
/// CLOCK_REALTIME as a WallTime.
public enum MonotonicClock {
    /// CLOCK_MONOTONIC now.
    public static func now() -> Instant { Instant(nanoseconds: reading(CLOCK_MONOTONIC).nanoseconds) }

    /// CLOCK_REALTIME now (for when something happened, shown to users).
    public static func wallTime() -> WallTime { WallTime(sinceEpoch: reading(CLOCK_REALTIME)) }

    /// CLOCK_REALTIME now in whole microseconds, as D-Bus carries timestamps.
    public static func wallMicroseconds() -> UInt64 { wallTime().microseconds }

    /// CLOCK_BOOTTIME now: monotonic, and counting time suspended (lengths shown to users).
    public static func bootTime() -> BootTime { BootTime(sinceBoot: reading(CLOCK_BOOTTIME)) }

    /// How far CLOCK_BOOTTIME is ahead of CLOCK_MONOTONIC: it grows only while the machine sleeps.
    public static func slept() -> Duration {
        let boot = bootTime().sinceBoot
        let monotonic = now().sinceOrigin
        return boot > monotonic ? boot - monotonic : .zero
    }

    /// `clock` now, from its origin.
    @inline(__always) private static func reading(_ clock: clockid_t) -> Duration {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return .nanoseconds(UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }
}
