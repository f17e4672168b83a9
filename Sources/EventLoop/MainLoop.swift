import CLinux
import Glibc

/// A single-threaded event loop over epoll.
///
/// Everything registered here runs on the thread that calls `run()`. One turn:
/// run the end-of-turn work, wait for descriptors or the next timer, handle
/// what is ready, fire due timers. Work queued with `atEndOfTurn` runs after
/// everything that was ready in the same turn, which is where coalesced
/// notifications are flushed.
public final class MainLoop {
    private let epollFD: Int32
    private var sourcesByFD: [Int32: [IOSource]] = [:]
    private var registeredMask: [Int32: UInt32] = [:]
    private var timers: [ObjectIdentifier: LoopTimer] = [:]
    private var endOfTurn: [() -> Void] = []
    private var exitStatus: Int32?

    public init() throws(SystemError) {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemError("epoll_create1") }
        epollFD = fd
    }

    deinit {
        close(epollFD)
    }

    // MARK: Descriptors

    /// Watches `fd` for `interest`; the handler receives what is ready.
    @discardableResult
    public func watch(fd: Int32, interest: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemError) -> IOSource {
        let source = IOSource(fd: fd, interest: interest, handler: handler)
        sourcesByFD[fd, default: []].append(source)
        try updateRegistration(fd)
        return source
    }

    /// Changes what `source` waits for (an empty set pauses it).
    public func setInterest(_ source: IOSource, _ interest: IOEvents) throws(SystemError) {
        guard source.isActive, source.interest != interest else { return }
        source.interest = interest
        try updateRegistration(source.fd)
    }

    /// Stops watching; safe to call from the source's own handler.
    public func remove(_ source: IOSource) {
        guard source.isActive else { return }
        source.isActive = false
        sourcesByFD[source.fd]?.removeAll { $0 === source }
        if sourcesByFD[source.fd]?.isEmpty == true { sourcesByFD[source.fd] = nil }
        try? updateRegistration(source.fd)
    }

    private func updateRegistration(_ fd: Int32) throws(SystemError) {
        let mask = (sourcesByFD[fd] ?? []).reduce(UInt32(0)) { $0 | $1.interest.rawValue }
        let old = registeredMask[fd]
        var event = epoll_event()
        event.events = mask
        event.data.fd = fd
        if sourcesByFD[fd] == nil {
            if old != nil {
                registeredMask[fd] = nil
                // The fd may already be closed by its owner; ENOENT/EBADF are fine then.
                _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
            }
            return
        }
        if old == mask { return }
        let op = old == nil ? EPOLL_CTL_ADD : EPOLL_CTL_MOD
        guard epoll_ctl(epollFD, op, fd, &event) == 0 else { throw SystemError("epoll_ctl") }
        registeredMask[fd] = mask
    }

    // MARK: Timers

    /// Calls `handler` after `nanoseconds`, and every `nanoseconds` after that when `repeats`.
    @discardableResult
    public func schedule(after nanoseconds: UInt64, repeats: Bool = false, handler: @escaping () -> Void) -> LoopTimer {
        let timer = LoopTimer(deadline: MonotonicClock.now() &+ nanoseconds, interval: nanoseconds,
                              repeats: repeats, handler: handler)
        timers[ObjectIdentifier(timer)] = timer
        return timer
    }

    public func cancel(_ timer: LoopTimer) {
        timer.isActive = false
        timers[ObjectIdentifier(timer)] = nil
    }

    private func nextTimeout() -> timespec? {
        guard let first = timers.values.min(by: { $0.deadline < $1.deadline }) else { return nil }
        let now = MonotonicClock.now()
        let wait = first.deadline > now ? first.deadline - now : 0
        return timespec(tv_sec: Int(wait / 1_000_000_000), tv_nsec: Int(wait % 1_000_000_000))
    }

    private func fireDueTimers() {
        guard !timers.isEmpty else { return }
        let now = MonotonicClock.now()
        // Most turns are for descriptors: no allocation unless a timer is due.
        guard timers.values.contains(where: { $0.deadline <= now }) else { return }
        let due = timers.values.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
        for timer in due where timer.isActive {
            if timer.repeats {
                timer.deadline = max(timer.deadline &+ timer.interval, now &+ 1)
            } else {
                cancel(timer)
            }
            timer.handler()
        }
    }

    // MARK: Turns

    /// Runs `work` once, after everything ready in this turn has been handled.
    public func atEndOfTurn(_ work: @escaping () -> Void) {
        endOfTurn.append(work)
    }

    private func runEndOfTurn() {
        // Work may queue more work; it runs in the same turn.
        while !endOfTurn.isEmpty {
            let batch = endOfTurn
            endOfTurn = []
            for work in batch { work() }
        }
    }

    /// Makes `run()` return `status` at the end of the current turn.
    public func quit(status: Int32) {
        if exitStatus == nil { exitStatus = status }
    }

    /// Runs until `quit(status:)`, and returns that status; it may be run again afterwards.
    public func run() -> Int32 {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            runEndOfTurn()
            if let status = exitStatus {
                exitStatus = nil
                return status
            }
            var timeout = nextTimeout()
            let n = events.withUnsafeMutableBufferPointer { buffer in
                if timeout != nil {
                    return epoll_pwait2(epollFD, buffer.baseAddress, Int32(buffer.count), &timeout!, nil)
                }
                return epoll_pwait2(epollFD, buffer.baseAddress, Int32(buffer.count), nil, nil)
            }
            if n < 0 {
                if errno == EINTR { continue }
                preconditionFailure("epoll_pwait2: \(SystemError("epoll_pwait2"))")
            }
            for i in 0..<Int(n) {
                let ready = IOEvents(rawValue: events[i].events)
                let fd = events[i].data.fd
                guard let sources = sourcesByFD[fd] else { continue }
                for source in sources where source.isActive {
                    let relevant = ready.intersection(source.interest.union([.error, .hangup]))
                    if !relevant.isEmpty && !source.interest.isEmpty { source.handler(relevant) }
                }
            }
            fireDueTimers()
        }
    }

    // MARK: Signals

    /// Delivers `signals` through the loop instead of asynchronously. Call before
    /// any thread starts, so every thread inherits the blocked mask.
    public func handleSignals(_ signals: [Int32], handler: @escaping (Int32) -> Void) throws(SystemError) {
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in signals { sigaddset(&mask, signal) }
        guard pthread_sigmask(SIG_BLOCK, &mask, nil) == 0 else { throw SystemError("pthread_sigmask") }
        let fd = signalfd(-1, &mask, Int32(SFD_CLOEXEC | SFD_NONBLOCK))
        guard fd >= 0 else { throw SystemError("signalfd") }
        try watch(fd: fd, interest: .readable) { _ in
            var info = signalfd_siginfo()
            while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
                handler(Int32(info.ssi_signo))
            }
        }
    }
}
