import Glibc

/// CLOCK_MONOTONIC and CLOCK_REALTIME readings in nanoseconds / microseconds.
public enum MonotonicClock {
    /// Nanoseconds on CLOCK_MONOTONIC.
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Microseconds on CLOCK_REALTIME (for timestamps shown to users).
    public static func wallMicroseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec / 1000)
    }
}
