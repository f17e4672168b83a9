import CLinux
import Glibc
import Synchronization

/// One background thread running jobs in order: blocking work (fsync,
/// getaddrinfo) that must never run on the loop. Started on first use;
/// idle, it sleeps in read(2) on an eventfd.
public final class WorkerThread: Sendable {
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let started = Atomic<Bool>(false)
    private let wakeFD: Int32

    public init() throws(SystemError) {
        let fd = eventfd(0, Int32(EFD_CLOEXEC))
        guard fd >= 0 else { throw SystemError("eventfd") }
        wakeFD = fd
    }

    deinit {
        close(wakeFD)
    }

    /// Queues `job`; returns at once.
    public func async(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        startIfNeeded()
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Waits until every job queued before this call has run.
    public func drain() {
        guard started.load(ordering: .acquiring) else {
            // Never started: nothing was queued.
            return
        }
        let done = eventfd(0, Int32(EFD_CLOEXEC))
        guard done >= 0 else { return }
        async {
            var one: UInt64 = 1
            _ = write(done, &one, 8)
        }
        var value: UInt64 = 0
        while read(done, &value, 8) < 0 && errno == EINTR {}
        close(done)
    }

    private func startIfNeeded() {
        guard started.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&thread, nil, { context in
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

    private func runJobs() {
        while true {
            var value: UInt64 = 0
            if read(wakeFD, &value, 8) < 0 {
                if errno == EINTR { continue }
                return
            }
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
