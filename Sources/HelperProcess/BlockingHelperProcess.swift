import CLinux
import EventLoop
import Glibc
import Probe
import Synchronization
import TrafficCensus

/// `netobserverd --blocking-helper`: the daemon's blocking work, asked on descriptor 3. Each lane has
/// a thread of its own, so a lookup that hangs holds up only the lookups behind it. Ends when the
/// daemon closes its end, or dies.
package enum BlockingHelperProcess {
    package static let descriptor: Int32 = 3
    package static let trimAfterMilliseconds: Int32 = 3_000

    package static func run() -> Int32 {
        guard CLinux_become_helper() == 0 else { return 1 }
        // One heap for the lanes' threads, not an arena each: their work is small.
        _ = mallopt(M_ARENA_MAX, 1)
        let answers = AnswerWriter(descriptor: descriptor)
        let work = HelperWork()
        var lanes: [WorkerThread] = []
        for _ in HelperLane.allCases {
            guard let lane = try? WorkerThread() else { return 1 }
            lanes.append(lane)
        }
        guard let dnsPool = try? QuestionPool(threads: QuestionPool.size) else { return 1 }
        var inbox: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var trimDue = true
        while true {
            // Idle a while after start-up or after work: what that used is let go, as the daemon does.
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, trimDue ? trimAfterMilliseconds : -1)
            if ready == 0 {
                _ = CLinux_drop_clean_file_pages()
                _ = malloc_trim(0)
                trimDue = false
                continue
            }
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            // The daemon closed its end (or exited): the threads end with the process.
            guard count > 0 else { _exit(0) }
            inbox += chunk[..<count]
            trimDue = true
            var start = 0
            reading: while true {
                let body: Range<Int>
                switch HelperWire.next(in: inbox, from: start) {
                case .body(let range): body = range
                case .incomplete: break reading
                case .outOfBounds: _exit(2)
                }
                guard let (id, lane, quiet, request) = HelperWire.request(inbox[body]) else { _exit(2) }
                start = body.upperBound
                let job: @Sendable () -> Void = {
                    let answer = work.perform(request)
                    // A quiet request's success is not said: no answer wakes the daemon for nothing.
                    if quiet && !answer.isFailure { return }
                    answers.send(HelperWire.frame(id: id, lane: lane, answer))
                }
                if lane == .dnsTruth {
                    dnsPool.async(job)
                } else {
                    lanes[Int(lane.rawValue)].async(job)
                }
            }
            inbox.removeFirst(start)
        }
    }
}

/// DNS truth's lane: a few threads, each question to the one with the least work waiting, so a question
/// waits behind at most a few others (each bounded by its limit), never behind every target's.
private final class QuestionPool: Sendable {
    static let size = 4
    private let threads: [WorkerThread]
    /// Each thread's questions not yet answered.
    private let queued: Mutex<[Int]>

    init(threads count: Int) throws(SystemError) {
        var threads: [WorkerThread] = []
        for _ in 0..<count { threads.append(try WorkerThread()) }
        self.threads = threads
        queued = Mutex([Int](repeating: 0, count: count))
    }

    func async(_ job: @escaping @Sendable () -> Void) {
        let chosen = queued.withLock { counts in
            let index = counts.indices.min { counts[$0] < counts[$1] } ?? 0
            counts[index] += 1
            return index
        }
        threads[chosen].async { [self] in
            job()
            queued.withLock { $0[chosen] -= 1 }
        }
    }
}

/// The helper's end of the socket, shared by the lanes' threads: each answer goes out whole.
private final class AnswerWriter: Sendable {
    private let descriptor: Int32
    private let writing = Mutex(())

    package init(descriptor: Int32) { self.descriptor = descriptor }

    package func send(_ frame: [UInt8]) {
        writing.withLock { _ in
            var sent = 0
            while sent < frame.count {
                let count = frame.withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress.map { $0 + sent }, $0.count - sent, Int32(MSG_NOSIGNAL))
                }
                if count < 0 && errno == EINTR { continue }
                // The daemon is gone.
                guard count > 0 else { _exit(0) }
                sent += count
            }
        }
    }
}

/// Does one request, as the daemon would have on a thread of its own.
private final class HelperWork: Sendable {
    private let census = Mutex<CensusTaker?>(nil)

    package func perform(_ request: HelperRequest) -> HelperAnswer {
        switch request {
        case .resolve(let host, let family):
            return .resolved(HostResolver.systemLookup(host, family))
        case .sample(let host, let route, let sources, let now):
            return census.withLock { taker in
                do throws(SystemError) {
                    let current: CensusTaker
                    if let taker { current = taker } else { current = try CensusTaker() }
                    taker = current
                    return .sampled(current.sample(host: host, route: route, sources: sources, now: now))
                } catch {
                    return .sampled(.init(result: .failure(.refused(error)), cost: .zero, dumpCost: .zero))
                }
            }
        case .write(let directory, let name, let text):
            do throws(SystemError) {
                try AtomicFile(directory: directory, name: name).write(text)
                return .written(nil)
            } catch {
                return .written(error)
            }
        case .remove(let directory, let name):
            return .removed(AtomicFile(directory: directory, name: name).remove())
        case .read(let directory, let name, let maximumSize):
            return .read(
                AtomicFile(directory: directory, name: name).read(maximumSize: maximumSize).map { $0.map(Array.init) })
        case .barrier:
            return .passed
        case .askDns(let question, let limit, let viaStub):
            return .dnsAnswered(DnsAsker.ask(question, limitSeconds: limit, viaStub: viaStub))
        }
    }
}
