import Glibc
import Timekeeping

/// CLOCK_MONOTONIC as an Instant; CLOCK_REALTIME and CLOCK_BOOTTIME readings in microseconds.
public enum MonotonicClock {
    /// CLOCK_MONOTONIC now.
    public static func now() -> Instant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Instant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    /// Microseconds on CLOCK_REALTIME (for timestamps shown to users).
    public static func wallMicroseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec / 1000)
    }

    /// Microseconds on CLOCK_BOOTTIME: monotonic, and counting time suspended (durations shown to users).
    public static func bootMicroseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec / 1000)
    }

    /// How far CLOCK_BOOTTIME is ahead of CLOCK_MONOTONIC, µs: it grows only while the machine sleeps.
    public static func sleptMicroseconds() -> UInt64 {
        let boot = bootMicroseconds()
        let monotonic = now().sinceOrigin.microseconds
        return boot >= monotonic ? boot - monotonic : 0
    }
}
