import Glibc
import Timekeeping

/// CLOCK_MONOTONIC as an Instant; CLOCK_BOOTTIME and CLOCK_REALTIME readings; CLOCK_REALTIME in microseconds.
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

    /// CLOCK_REALTIME now (for when something happened, shown to users).
    public static func wallTime() -> WallTime {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return WallTime(sinceEpoch: .nanoseconds(UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)))
    }

    /// CLOCK_BOOTTIME now: monotonic, and counting time suspended (lengths shown to users).
    public static func bootTime() -> BootTime {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return BootTime(sinceBoot: .nanoseconds(UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)))
    }

    /// How far CLOCK_BOOTTIME is ahead of CLOCK_MONOTONIC: it grows only while the machine sleeps.
    public static func slept() -> Duration {
        let boot = bootTime().sinceBoot
        let monotonic = now().sinceOrigin
        return boot > monotonic ? boot - monotonic : .zero
    }
}
