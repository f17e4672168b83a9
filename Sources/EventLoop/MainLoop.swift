import CLinux
import Glibc
import Timekeeping

/// A single-threaded event loop over epoll.
///
/// Everything registered here runs on the thread that calls `run()`. One turn:
/// run the end-of-turn work, wait for descriptors or the next timer, handle
/// what is ready, fire due timers. Work queued with `atEndOfTurn` runs after
/// everything that was ready in the same turn, which is where coalesced
/// notifications are flushed.
public final class MainLoop {
    /// One epoll registration: the sources watching a descriptor, under a token that is
    /// never reused, so an event queued for a descriptor since closed (and its number
    /// reused by a new socket) reaches nobody.
    private struct Registration {
        let token: UInt64
        var sources: [IOSource]
        var mask: UInt32?
    }

    private let epoll: Descriptor
    private var epollFD: Int32 { epoll.raw }
    /// The signalfd `handleSignals` opened, closed with the loop.
    private var signalDescriptor: Descriptor?
    // The loop's own state is touched only by single operations that run no handler: every handler is called
    // after the access that found it has ended, so no access to these can overlap another. Their run-time
    // exclusivity checks, a third of the loop's own instructions per turn, are left out.
    @exclusivity(unchecked) private var registrations: [Int32: Registration] = [:]
    @exclusivity(unchecked) private var descriptorByToken: [UInt64: Int32] = [:]
    @exclusivity(unchecked) private var lastToken: UInt64 = 0
    @exclusivity(unchecked) private var timers = TimerHeap()
    /// Timers with leeway, which ride on other wake-ups: few (housekeeping), so a list serves.
    @exclusivity(unchecked) private var lenientTimers: [LoopTimer] = []
    @exclusivity(unchecked) private var endOfTurn: [() -> Void] = []
    @exclusivity(unchecked) private var runningBatch: [() -> Void] = []
    @exclusivity(unchecked) private var exitStatus: Int32?
    /// The loop's time (monotonic): timers are due by it. Tests pass a clock they advance.
    public let clock: @Sendable () -> Instant

    /// How the loop waits: `epoll_pwait2` takes a nanosecond timeout; kernels
    /// before 5.11 lack it (ENOSYS) and seccomp filters written before it may
    /// forbid it (EPERM), and then `epoll_pwait` with milliseconds serves.
    public enum WaitCall: Sendable {
        case epollPwait2
        case epollPwait
    }
    public let waitCall: WaitCall

    /// Called after a turn whose work took longer than `slowTurn`, with its duration.
    @exclusivity(unchecked) public var onSlowTurn: ((Duration) -> Void)?
    @exclusivity(unchecked) public var slowTurn = Duration.milliseconds(50)

    /// `waitCall` nil: decided once here, by trying `epoll_pwait2`.
    public init(
        waitCall: WaitCall? = nil, clock: @escaping @Sendable () -> Instant = MonotonicClock.now
    ) throws(SystemError) {
        epoll = try Syscall.descriptor("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        self.clock = clock
        self.waitCall = waitCall ?? Self.probeWaitCall(epollFD: epoll.raw)
    }

    private static func probeWaitCall(epollFD: Int32) -> WaitCall {
        // The set is still empty, so this returns at once and consumes nothing.
        var event = epoll_event()
        var zero = timespec(tv_sec: 0, tv_nsec: 0)
        if epoll_pwait2(epollFD, &event, 1, &zero, nil) < 0 && (errno == ENOSYS || errno == EPERM) {
            return .epollPwait
        }
        return .epollPwait2
    }

    /// The loop's clock now.
    public func now() -> Instant { clock() }

    // MARK: Descriptors

    /// Watches `fd` for `interest`; the handler receives what is ready.
    @discardableResult
    public func watch(
        fd: Int32, interest: IOEvents, handler: @escaping (IOEvents) -> Void
    ) throws(SystemError) -> IOSource {
        let source = IOSource(fd: fd, interest: interest, handler: handler)
        if registrations[fd] == nil {
            lastToken += 1
            registrations[fd] = Registration(token: lastToken, sources: [], mask: nil)
            descriptorByToken[lastToken] = fd
        }
        registrations[fd]?.sources.append(source)
        do {
            try updateRegistration(fd)
        } catch {
            remove(source)
            throw error
        }
        return source
    }

    /// Changes what `source` waits for (an empty set pauses it).
    public func setInterest(_ source: IOSource, _ interest: IOEvents) throws(SystemError) {
        guard source.isActive, source.interest != interest else { return }
        source.interest = interest
        try updateRegistration(source.fd)
    }

    /// Stops watching; safe to call from the source's own handler. Call it before closing the descriptor.
    public func remove(_ source: IOSource) {
        guard source.isActive else { return }
        source.isActive = false
        registrations[source.fd]?.sources.removeAll { $0 === source }
        try? updateRegistration(source.fd)
    }

    private func updateRegistration(_ fd: Int32) throws(SystemError) {
        guard let registration = registrations[fd] else { return }
        var event = epoll_event()
        event.data.u64 = registration.token
        if registration.sources.isEmpty {
            registrations[fd] = nil
            descriptorByToken[registration.token] = nil
            if registration.mask != nil {
                // The fd may already be closed by its owner; ENOENT/EBADF are fine then.
                _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
            }
            return
        }
        let mask = registration.sources.reduce(UInt32(0)) { $0 | $1.interest.rawValue }
        if registration.mask == mask { return }
        event.events = mask
        let op = registration.mask == nil ? EPOLL_CTL_ADD : EPOLL_CTL_MOD
        guard epoll_ctl(epollFD, op, fd, &event) == 0 else { throw SystemError("epoll_ctl") }
        registrations[fd]?.mask = mask
    }

    /// The sources an event with `token` is for; none when that registration has ended.
    private func sources(for token: UInt64) -> [IOSource]? {
        guard let fd = descriptorByToken[token], let registration = registrations[fd], registration.token == token
        else { return nil }
        return registration.sources
    }

    // MARK: Timers

    /// Calls `handler` after `delay`, and every `delay` after that when `repeats`.
    @discardableResult
    public func schedule(after delay: Duration, repeats: Bool = false, handler: @escaping () -> Void) -> LoopTimer {
        schedule(after: delay, leeway: .zero, repeats: repeats, handler: handler)
    }

    /// Calls `handler` after `delay`, and every `delay` after that when `repeats`, on the
    /// first turn after then — but the loop wakes for it only `leeway` later (0: punctual). Housekeeping
    /// that need not be punctual rides on the wake-ups the loop has anyway and adds none of its own
    /// while anything else wakes the loop within `leeway`.
    @discardableResult
    public func schedule(
        after delay: Duration, leeway: Duration, repeats: Bool = false,
        handler: @escaping () -> Void
    ) -> LoopTimer {
        let timer = LoopTimer(
            deadline: Self.saturatingSum(clock(), delay), interval: delay,
            repeats: repeats, leeway: leeway, handler: handler)
        if leeway == .zero {
            timers.insert(timer)
        } else {
            lenientTimers.append(timer)
        }
        return timer
    }

    /// Calls `handler` once the loop's clock reaches `deadline`.
    @discardableResult
    public func schedule(at deadline: Instant, handler: @escaping () -> Void) -> LoopTimer {
        let timer = LoopTimer(deadline: deadline, interval: .zero, repeats: false, handler: handler)
        timers.insert(timer)
        return timer
    }

    /// A deadline far in the future stays there: it never wraps round to "due now".
    static func saturatingSum(_ a: Instant, _ b: Duration) -> Instant {
        let (sum, overflow) = a.nanoseconds.addingReportingOverflow(b.nanoseconds)
        return overflow ? .distantFuture : Instant(nanoseconds: sum)
    }

    public func cancel(_ timer: LoopTimer) {
        timer.isActive = false
        if timer.leeway == .zero {
            timers.remove(timer)
        } else {
            lenientTimers.removeAll { $0 === timer }
        }
    }

    /// How many timers are scheduled (for tests and diagnostics).
    public var scheduledTimers: Int { timers.count + lenientTimers.count }

    /// The latest the loop may sleep until: the next punctual deadline, or a lenient one's end of leeway.
    private var nextWake: Instant? {
        let lenient = lenientTimers.lazy.map { Self.saturatingSum($0.deadline, $0.leeway) }.min()
        guard let first = timers.first?.deadline else { return lenient }
        return min(first, lenient ?? first)
    }

    /// How long until the loop must wake for a timer; nil when none is scheduled.
    private func nextWait() -> Duration? {
        guard let wake = nextWake else { return nil }
        return wake.duration(since: clock())
    }

    private func hasDueTimers(_ now: Instant) -> Bool {
        if let first = timers.first, first.deadline <= now { return true }
        return lenientTimers.contains { $0.deadline <= now }
    }

    private func fireDueTimers() {
        let now = clock()
        // Most turns are for descriptors: no allocation unless a timer is due.
        guard hasDueTimers(now) else { return }
        // Take every due timer out first, so handlers that schedule new ones
        // (even with no delay) do not run them in this same pass.
        var due: [LoopTimer] = []
        while let next = timers.first, next.deadline <= now {
            timers.remove(next)
            due.append(next)
        }
        for timer in lenientTimers where timer.deadline <= now {
            due.append(timer)
        }
        for timer in due where timer.isActive {
            if timer.leeway != .zero {
                // A lenient timer counts its interval from when it ran: riding late never makes it run twice.
                if timer.repeats {
                    timer.deadline = Self.saturatingSum(now, timer.interval)
                } else {
                    cancel(timer)
                }
            } else if timer.repeats {
                timer.deadline = max(Self.saturatingSum(timer.deadline, timer.interval), now &+ .nanoseconds(1))
                timers.insert(timer)
            } else {
                timer.isActive = false
            }
            timer.handler()
        }
    }

    private func wait(_ events: UnsafeMutableBufferPointer<epoll_event>, atMost limit: Duration?) -> Int32 {
        let count = Int32(events.count)
        switch waitCall {
        case .epollPwait2:
            guard let nanoseconds = limit?.nanoseconds else {
                return epoll_pwait2(epollFD, events.baseAddress, count, nil, nil)
            }
            var timeout = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
            return epoll_pwait2(epollFD, events.baseAddress, count, &timeout, nil)
        case .epollPwait:
            // Rounded up: waking early would only mean another turn to wait the rest.
            let milliseconds = limit.map { Int32(clamping: ($0.nanoseconds + 999_999) / 1_000_000) } ?? -1
            return epoll_pwait(epollFD, events.baseAddress, count, milliseconds, nil)
        }
    }

    // MARK: Turns

    /// Runs `work` once, after everything ready in this turn has been handled.
    public func atEndOfTurn(_ work: @escaping () -> Void) {
        endOfTurn.append(work)
    }

    private func runEndOfTurn() {
        // Work may queue more work; it runs in the same turn. The two queues
        // trade places, so no turn allocates a new one.
        while !endOfTurn.isEmpty {
            swap(&endOfTurn, &runningBatch)
            for work in runningBatch { work() }
            runningBatch.removeAll(keepingCapacity: true)
        }
    }

    /// Runs the end-of-turn work and every timer due by the clock, without waiting for
    /// descriptors: how a test that advances its clock makes time pass.
    public func runDueWork() {
        repeat {
            runEndOfTurn()
            fireDueTimers()
        } while !endOfTurn.isEmpty || hasDueTimers(clock())
    }

    /// Makes `run()` return `status` at the end of the current turn.
    public func quit(status: Int32) {
        if exitStatus == nil { exitStatus = status }
    }

    /// Runs until `quit(status:)`, and returns that status; it may be run again afterwards.
    public func run() -> Int32 {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var turnStarted: Instant?
        while true {
            runEndOfTurn()
            if let onSlowTurn, let turnStarted {
                let took = MonotonicClock.now() - turnStarted
                if took > slowTurn { onSlowTurn(took) }
            }
            if let status = exitStatus {
                exitStatus = nil
                return status
            }
            let timeout = nextWait()
            let n = events.withUnsafeMutableBufferPointer { wait($0, atMost: timeout) }
            if n < 0 {
                if errno == EINTR { continue }
                // Only EBADF, EFAULT or EINVAL are left: the loop's own descriptor or buffer is wrong.
                preconditionFailure("epoll wait: \(SystemError("epoll_pwait"))")
            }
            if onSlowTurn != nil { turnStarted = MonotonicClock.now() }
            dispatch(events, count: n)
            fireDueTimers()
        }
    }

    /// One turn that waits at most `limit` for descriptors: what is ready by then, the
    /// timers due by the clock, the end-of-turn work. How a test on an injected clock lets
    /// answers from other threads (the resolver's) arrive.
    public func runTurn(waitingAtMost limit: Duration) {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        runEndOfTurn()
        let n = events.withUnsafeMutableBufferPointer { wait($0, atMost: limit) }
        if n > 0 { dispatch(events, count: n) }
        fireDueTimers()
        runEndOfTurn()
    }

    private func dispatch(_ events: [epoll_event], count n: Int32) {
        for i in 0..<Int(n) {
            let ready = IOEvents(rawValue: events[i].events)
            guard let sources = sources(for: events[i].data.u64) else { continue }
            for source in sources where source.isActive {
                let relevant = ready.intersection(source.interest.union([.error, .hangup]))
                if !relevant.isEmpty && !source.interest.isEmpty { source.handler(relevant) }
            }
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
        precondition(signalDescriptor == nil, "handleSignals is called once")
        let descriptor = try Syscall.descriptor("signalfd") { signalfd(-1, &mask, Int32(SFD_CLOEXEC | SFD_NONBLOCK)) }
        let fd = descriptor.raw
        signalDescriptor = consume descriptor
        try watch(fd: fd, interest: .readable) { _ in
            var info = signalfd_siginfo()
            while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
                handler(Int32(info.ssi_signo))
            }
        }
    }
}
