import CLinux
import Glibc
import Timekeeping

/// Readiness of a file descriptor, as the loop reports it.
public struct IOEvents: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let readable = IOEvents(rawValue: EPOLLIN.rawValue)
    public static let writable = IOEvents(rawValue: EPOLLOUT.rawValue)
    public static let error = IOEvents(rawValue: EPOLLERR.rawValue)
    public static let hangup = IOEvents(rawValue: EPOLLHUP.rawValue)
}

/// One interest in one descriptor. Several sources may watch the same fd
/// (libdbus keeps a read and a write watch on its socket); the loop merges them.
public final class IOSource {
    public let fd: Int32
    // Like the loop's own state (MainLoop), read and written only by single loads and stores.
    @exclusivity(unchecked) public internal(set) var interest: IOEvents
    @exclusivity(unchecked) public internal(set) var isActive = true
    let handler: (IOEvents) -> Void

    init(fd: Int32, interest: IOEvents, handler: @escaping (IOEvents) -> Void) {
        self.fd = fd
        self.interest = interest
        self.handler = handler
    }
}

/// A timer on the loop's monotonic clock; repeating timers re-arm until cancelled.
public final class LoopTimer {
    public let interval: Duration
    public let repeats: Bool
    /// How much later than `deadline` it may fire: the loop wakes for it only then, and fires it
    /// sooner when something else wakes the loop after `deadline`.
    public let leeway: Duration
    // Like the loop's own state (MainLoop), read and written only by single loads and stores.
    @exclusivity(unchecked) public internal(set) var isActive = true
    /// When it fires next, on MonotonicClock.
    @exclusivity(unchecked) public internal(set) var deadline: Instant
    /// Position in the loop's TimerHeap; -1 when not scheduled.
    @exclusivity(unchecked) var heapIndex = -1
    let handler: () -> Void

    init(deadline: Instant, interval: Duration, repeats: Bool, leeway: Duration = .zero, handler: @escaping () -> Void)
    {
        self.deadline = deadline
        self.interval = interval
        self.repeats = repeats
        self.leeway = leeway
        self.handler = handler
    }
}
