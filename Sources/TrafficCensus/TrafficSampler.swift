import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import Reachability
import ProbeRules
import Synchronization
import Timekeeping

/// Takes samples of this machine's TCP connections for every target: on the loop when the last
/// one was cheap, else on a thread of its own whose answer comes back on the loop, so a dump of
/// thousands of sockets never stalls D-Bus. Each sample reports the CPU it took. A sample that
/// fails is counted and said in the log (the first of its kind at once, then at most once a minute).
public final class TrafficSampler {
    public typealias Completion = (_ sample: TrafficSample?, _ cost: Duration) -> Void

    private struct Answer: Sendable {
        let id: UInt64
        let sample: Result<TrafficSample, ConnectionCensus.Failure>
        let cost: Duration
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
    private let log: (String) -> Void
    /// Samples that failed since the service started.
    public private(set) var failures: UInt64 = 0
    private var lastFailureLogged: (what: String, at: Instant)?
    static let failureLogPeriod = Duration.seconds(60)

    public init(loop: MainLoop, log: @escaping (String) -> Void = { _ in }) throws(SystemError) {
        self.loop = loop
        self.log = log
        shared = Shared(try ConnectionCensus())
        worker = try WorkerThread()
        channel = try LoopChannel(loop: loop) { [unowned self] answer in
            let sample = counted(answer.sample)
            pending.removeValue(forKey: answer.id)?(sample, answer.cost)
        }
    }

    /// Samples now, on the loop; nil while a sample is under way on the thread, or when this one would walk
    /// the kernel's sockets and the last walk was dear (then use `sampleLater`).
    public func sampleNow(host: IPAddress, sources: [IPAddress]) -> (sample: TrafficSample?, cost: Duration)? {
        guard pending.isEmpty else { return nil }
        let now = loop.now()
        let taken: (Result<TrafficSample, ConnectionCensus.Failure>, Duration)? = shared.census.withLock { census in
            guard !census.needsDearDump(host: host, sources: sources, now: now) else { return nil }
            return Self.measured { census.sample(host: host, sources: sources, now: now, wait: 0) }
        }
        guard let (sample, cost) = taken else { return nil }
        return (counted(sample), cost)
    }

    /// A sample that walks the kernel's sockets whatever dump is recent, on this thread, and its cost (the bench's).
    public func sampleFresh(host: IPAddress, sources: [IPAddress]) -> (sample: TrafficSample?, cost: Duration) {
        let now = loop.now()
        let (sample, cost) = Self.measured {
            shared.census.withLock { $0.sample(host: host, sources: sources, now: now, wait: 100, fresh: true) }
        }
        return (counted(sample), cost)
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

    func counted(_ result: Result<TrafficSample, ConnectionCensus.Failure>) -> TrafficSample? {
        switch result {
        case .success(let sample):
            return sample
        case .failure(let failure):
            failures &+= 1
            let what = failure.description
            let now = loop.now()
            if lastFailureLogged?.what != what || now &- (lastFailureLogged?.at ?? .origin) >= Self.failureLogPeriod {
                log("traffic evidence: a sample of this machine's connections failed (\(what)); \(failures) failed in all")
                lastFailureLogged = (what, now)
            }
            return nil
        }
    }

    /// `body`'s result and the CPU time (user and system) this thread spent on it.
    private static func measured<T>(_ body: () -> T) -> (T, Duration) {
        let before = ConnectionCensus.threadCPU()
        let value = body()
        return (value, ConnectionCensus.threadCPU() &- before)
    }
}
