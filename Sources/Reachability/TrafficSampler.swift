import CLinux
import EventLoop
import Glibc
#if canImport(NetCore)
import NetCore
#endif
import ProbeRules
import Synchronization

/// Takes samples of this machine's TCP connections for every target: on the loop when the last
/// one was cheap, else on a thread of its own whose answer comes back on the loop, so a dump of
/// thousands of sockets never stalls D-Bus. Each sample reports the CPU it took.
public final class TrafficSampler {
    public typealias Completion = (_ sample: TrafficSample?, _ cost: UInt64) -> Void

    private struct Answer: Sendable {
        let id: UInt64
        let sample: TrafficSample?
        let cost: UInt64
    }

    private final class Shared: Sendable {
        let census: Mutex<ConnectionCensus>
        init(_ value: sending ConnectionCensus) { census = Mutex(value) }
    }

    private let loop: MainLoop
    private let shared: Shared
    private let worker: WorkerThread
    private var channel: LoopChannel<Answer>?
    private var pending: [UInt64: Completion] = [:]
    private var nextID: UInt64 = 0

    public init(loop: MainLoop) throws(SystemError) {
        self.loop = loop
        shared = Shared(try ConnectionCensus())
        worker = try WorkerThread()
        channel = try LoopChannel(loop: loop) { [unowned self] answer in
            pending.removeValue(forKey: answer.id)?(answer.sample, answer.cost)
        }
    }

    /// Samples now, on the loop; nil while a sample is under way on the thread (then use `sampleLater`).
    public func sampleNow(host: IPAddress, sources: [IPAddress]) -> (sample: TrafficSample?, cost: UInt64)? {
        guard pending.isEmpty else { return nil }
        let now = loop.now()
        return Self.measured { shared.census.withLock { $0.sample(host: host, sources: sources, now: now, wait: 0) } }
    }

    /// Samples on the sampler's thread; `completion` runs on the loop.
    public func sampleLater(host: IPAddress, sources: [IPAddress], completion: @escaping Completion) {
        nextID &+= 1
        let id = nextID
        pending[id] = completion
        guard let sender = channel?.sender else { return }
        let shared = self.shared
        let now = loop.now()
        worker.async {
            let (sample, cost) = Self.measured {
                shared.census.withLock { $0.sample(host: host, sources: sources, now: now, wait: 100) }
            }
            sender.send(Answer(id: id, sample: sample, cost: cost))
        }
    }

    /// `body`'s result and the CPU time (user and system) this thread spent on it, in ns.
    private static func measured<T>(_ body: () -> T) -> (T, UInt64) {
        let before = threadCPU()
        let value = body()
        return (value, threadCPU() &- before)
    }

    private static func threadCPU() -> UInt64 {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
        return UInt64(max(time.tv_sec, 0)) * 1_000_000_000 + UInt64(max(time.tv_nsec, 0))
    }
}
