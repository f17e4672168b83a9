import CLinux
import Glibc
import Synchronization

/// One background thread running jobs in order: blocking work (fsync,
/// getaddrinfo) that must never run on the loop. Started on first use;
/// idle, it sleeps in read(2) on an eventfd.
public final class WorkerThread: Sendable {
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let started = Atomic<Bool>(false)
    private let wake: Descriptor

    public init() throws(SystemError) {
        wake = try Syscall.descriptor("eventfd") { eventfd(0, Int32(EFD_CLOEXEC)) }
    }

    /// Queues `job`; returns at once.
    public func async(_ job: @escaping @Sendable () -> Void) {
        enqueue(job)
        wakeUp()
    }

    /// Queues `job` without waking the thread: it runs at the next `wakeUp` (or `async`, or `drain`).
    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        startIfNeeded()
    }

    /// Queues `job` and wakes the thread once `loop`'s turn has done all its other work: what the turn
    /// sends (replies, signals) goes out before another thread competes for the CPU.
    public func async(afterTurnOf loop: MainLoop, _ job: @escaping @Sendable () -> Void) {
        enqueue(job)
        loop.atEndOfTurn { [self] in loop.atEndOfTurn { [self] in wakeUp() } }
    }

    private func wakeUp() {
        var one: UInt64 = 1
        _ = try? Syscall.retrying("write(eventfd)") { write(wake.raw, &one, 8) }
    }

    /// Waits until every job queued before this call has run.
    public func drain() {
        guard started.load(ordering: .acquiring) else {
            // Never started: nothing was queued.
            return
        }
        guard let done = try? Syscall.descriptor("eventfd", { eventfd(0, Int32(EFD_CLOEXEC)) }) else { return }
        let raw = done.raw
        async {
            var one: UInt64 = 1
            _ = try? Syscall.retrying("write(eventfd)") { write(raw, &one, 8) }
        }
        var value: UInt64 = 0
        _ = try? Syscall.retrying("read(eventfd)") { read(raw, &value, 8) }
        _ = consume done
    }

    private func startIfNeeded() {
        guard started.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                Unmanaged<WorkerThread>.fromOpaque(context).takeRetainedValue().runJobs()
                return nil
            }, context)
        if result == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<WorkerThread>.fromOpaque(context).release()
            preconditionFailure("pthread_create: \(SystemError("pthread_create", errno: result))")
        }
    }

    /// Blocking work waits for the loop and the bus: a lookup or an fsync never takes a core from delivering a signal.
    static let nice: Int32 = 10

    private func runJobs() {
        _ = CLinux_lower_thread_priority(Self.nice)
        while true {
            var value: UInt64 = 0
            guard (try? Syscall.retrying("read(eventfd)") { read(wake.raw, &value, 8) }) != nil else { return }
            while true {
                let batch = jobs.withLock { queue in
                    defer { queue.removeAll() }
                    return queue
                }
                if batch.isEmpty { break }
                for job in batch { job() }
            }
        }
    }
}
