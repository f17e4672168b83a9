import CLinux
import EventLoop
import Glibc
import NetAddress
import ReachabilityRules
import NetCore
import Reachability
import ProbeRules
import Synchronization
import Timekeeping

/// Takes samples of this machine's TCP connections for every target: on the loop when the last
/// one was cheap, else elsewhere — the daemon's blocking helper (`asking`), or a thread of its own —
/// whose answer comes back on the loop, so a dump of thousands of sockets never stalls D-Bus. Each
/// sample reports the CPU it took. A sample that fails is counted and said in the log (the first of
/// its kind at once, then at most once a minute).
public final class TrafficSampler {
    public typealias Completion = (_ sample: TrafficSample?, _ cost: Duration) -> Void

    /// A sample taken off the loop: its result, the CPU it took, and what the last full walk of the kernel's sockets cost.
    public struct Taken: Sendable, Equatable {
        public let result: Result<TrafficSample, CensusFailure>
        public let cost: Duration
        public let dumpCost: Duration

        public init(result: Result<TrafficSample, CensusFailure>, cost: Duration, dumpCost: Duration) {
            self.result = result
            self.cost = cost
            self.dumpCost = dumpCost
        }
    }

    /// Takes a sample elsewhere (`CensusTaker`) and answers on the loop.
    public typealias Asking = (
        _ host: IPAddress, _ route: HostRoute?, _ sources: [IPAddress], _ now: Instant,
        _ answer: @escaping (Taken) -> Void
    ) -> Void

    /// How long a read off the loop waits for the kernel (ms).
    static let dumpWait: Int32 = 100

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
    private let worker: WorkerThread?
    private let asking: Asking?
    private var channel: LoopChannel<Answer>?
    private var pending: [UInt64: Completion] = [:]
    private var nextID: UInt64 = 0
    private let log: (String) -> Void
    /// Samples that failed since the service started.
    public private(set) var failures: UInt64 = 0
    private var lastFailureLogged: (what: String, at: Instant)?
    static let failureLogPeriod = Duration.seconds(60)

    /// `asking`: where the dear samples are taken; nil: on a thread of this process.
    public init(loop: MainLoop, log: @escaping (String) -> Void = { _ in }, asking: Asking? = nil) throws(SystemError) {
        self.loop = loop
        self.log = log
        self.asking = asking
        shared = Shared(try ConnectionCensus())
        worker = asking == nil ? try WorkerThread() : nil
        channel = try LoopChannel(loop: loop) { [unowned self] answer in
            let sample = counted(answer.sample)
            pending.removeValue(forKey: answer.id)?(sample, answer.cost)
        }
    }

    /// Samples now, on the loop; nil while a sample is under way on the thread, or when this one would walk
    /// the kernel's sockets and the last walk was dear (then use `sampleLater`).
    /// `route`: Host's route as the route core knows it (nil: the census asks the kernel).
    public func sampleNow(
        host: IPAddress, route: HostRoute? = nil, sources: [IPAddress]
    ) -> (
        sample: TrafficSample?, cost: Duration
    )? {
        guard pending.isEmpty else { return nil }
        let now = loop.now()
        let taken: (Result<TrafficSample, ConnectionCensus.Failure>, Duration)? = shared.census.withLock { census in
            guard !census.needsDearDump(host: host, sources: sources, now: now) else { return nil }
            return Self.measured { census.sample(host: host, route: route, sources: sources, now: now, wait: 0) }
        }
        guard let (sample, cost) = taken else { return nil }
        return (counted(sample), cost)
    }

    /// A sample that walks the kernel's sockets whatever dump is recent, on this thread, and its cost (the bench's).
    public func sampleFresh(host: IPAddress, sources: [IPAddress]) -> (sample: TrafficSample?, cost: Duration) {
        let now = loop.now()
        let (sample, cost) = Self.measured {
            shared.census.withLock {
                $0.sample(host: host, sources: sources, now: now, wait: Self.dumpWait, fresh: true)
            }
        }
        return (counted(sample), cost)
    }

    /// Samples off the loop; `completion` runs on the loop.
    public func sampleLater(
        host: IPAddress, route: HostRoute? = nil, sources: [IPAddress], completion: @escaping Completion
    ) {
        nextID &+= 1
        let id = nextID
        pending[id] = completion
        let now = loop.now()
        if let asking {
            asking(host, route, sources, now) { [weak self] taken in
                guard let self else { return }
                // The helper's walks say whether the next one is cheap enough for the loop.
                self.shared.census.withLock { $0.lastDumpCost = taken.dumpCost }
                let sample = counted(taken.result)
                pending.removeValue(forKey: id)?(sample, taken.cost)
            }
            return
        }
        guard let sender = channel?.sender, let worker else { return }
        let shared = self.shared
        worker.async {
            let (sample, cost) = Self.measured {
                shared.census.withLock {
                    $0.sample(host: host, route: route, sources: sources, now: now, wait: Self.dumpWait)
                }
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
                log(
                    "traffic evidence: a sample of this machine's connections failed (\(what)); \(failures) failed in all"
                )
                lastFailureLogged = (what, now)
            }
            return nil
        }
    }

    /// `body`'s result and the CPU time (user and system) this thread spent on it.
    static func measured<T>(_ body: () -> T) -> (T, Duration) {
        let before = ConnectionCensus.threadCPU()
        let value = body()
        return (value, ConnectionCensus.threadCPU() &- before)
    }
}
