import CLinux
import EventLoop
import Glibc
import MonitorRules
import NetAddress
import ReachabilityRules
import ProbeRules
import Timekeeping
import TrafficCensus

/// The daemon's blocking work — name lookups, census walks, the state directory's files — done in a
/// helper process (this binary, started with `--blocking-helper`), so the daemon never starts a
/// thread. glibc takes a mutex without a bus-locked instruction only while its process has never had
/// a second thread, and libdbus takes about ninety of them for every Get.
///
/// Started on first use. When it stops, every request it had not answered gets its failure at once,
/// and the next request starts another (at most one start a second).
package final class BlockingHelper {
    package static let argument = "--blocking-helper"
    /// The helper is the daemon's own binary.
    package static let executable = "/proc/self/exe"
    /// What may wait to be written to the helper before it is taken as stuck and replaced.
    package static let outboxLimit = 16 << 20
    package static let restartPause = Duration.seconds(1)
    private static let readChunk = 64 << 10
    /// However much the helper has sent, one turn reads at most this many chunks.
    private static let readsPerTurn = 16

    private struct Waiting {
        let lane: HelperLane
        let request: HelperRequest
        /// When it is answered "timed out" whatever the helper is doing, and the helper replaced.
        let deadline: Instant
        let completion: (HelperAnswer) -> Void
    }

    /// How long the helper may take over a request before the daemon answers it itself and replaces the helper: a
    /// lane's thread can hang for good (glibc waits on a TCP answer after a truncated one with no limit of its own;
    /// an NSS module, a hung file system), and everything behind it on its lane would hang with it.
    package static func limit(of request: HelperRequest) -> Duration {
        switch request {
        // The contract's limit on a lookup: max(5 s, Timeout) for checks and DNS truth, 5 s at the least.
        case .resolve: .seconds(5)
        // DNS truth's own limit, and a moment for the helper's own answer to come first.
        case .askDns(_, let limitSeconds, _): .seconds(max(limitSeconds, 1)) + .milliseconds(500)
        case .sample: .seconds(5)
        case .write, .read, .remove, .barrier: .seconds(10)
        }
    }

    /// One started helper: its end of the socket pair and what is on the way each way.
    private final class Connection {
        let socket: Descriptor
        let pid: pid_t
        var source: IOSource?
        var outbox: [UInt8] = []
        var inbox: [UInt8] = []

        init(socket: consuming Descriptor, pid: pid_t) {
            self.socket = socket
            self.pid = pid
        }
    }

    private let loop: MainLoop
    /// Where a warning goes (the daemon's log): the helper could not start, or stopped.
    package var onWarning: (String) -> Void = { _ in }
    private var connection: Connection?
    private var waiting: [UInt64: Waiting] = [:]
    /// Who hears a quiet request's failure, by lane (a quiet request is answered only when it fails).
    private var quietFailures: [HelperLane: (HelperAnswer) -> Void] = [:]
    private var nextID: UInt64 = 0
    /// Armed for the earliest deadline of the requests waiting.
    private var deadlineTimer: (timer: LoopTimer, at: Instant)?
    private var flushAsked = false
    private var lastStart: Instant?
    /// Helpers that stopped and are not reaped yet (each is, at the next start or stop).
    private var unreaped: [pid_t] = []

    package init(loop: MainLoop) {
        self.loop = loop
    }

    deinit {
        if let source = connection?.source { loop.remove(source) }
        if let deadlineTimer { loop.cancel(deadlineTimer.timer) }
    }

    /// Looks `host` up (getaddrinfo, `family` or AF_UNSPEC) behind the other lookups.
    /// `first`: the default target's, on a lane of their own.
    package func resolve(
        _ host: String, family: Int32, first: Bool = false,
        completion: @escaping (Result<[IPAddress], ResolverFailure>) -> Void
    ) {
        run(.resolve(host: host, family: family), on: first ? .firstLookups : .lookups) { answer in
            if case .resolved(let result) = answer { completion(result) }
        }
    }

    /// Asks `question` of the nameservers of /etc/resolv.conf in order, within `limitSeconds` in all (when they are
    /// only systemd-resolved's stub, only if `viaStub`: see `DnsAsker`).
    package func askDns(
        _ question: DnsQuestion, limitSeconds: UInt32, viaStub: Bool, completion: @escaping (DnsReply) -> Void
    ) {
        run(.askDns(question, limitSeconds: limitSeconds, viaStub: viaStub), on: .dnsTruth) { answer in
            if case .dnsAnswered(let reply) = answer { completion(reply) }
        }
    }

    /// Walks the census for connections to `host` from `sources` behind the other walks.
    package func sample(
        host: IPAddress, route: HostRoute?, sources: [IPAddress], now: Instant,
        completion: @escaping (TrafficSampler.Taken) -> Void
    ) {
        run(.sample(host: host, route: route, sources: sources, now: now), on: .census) { answer in
            if case .sampled(let taken) = answer { completion(taken) }
        }
    }

    /// Writes `text` to `name` in `directory` atomically behind `lane`'s other work; nil: it is on disk.
    package func write(
        _ text: String, to name: String, in directory: String, on lane: HelperLane,
        completion: @escaping (SystemError?) -> Void
    ) {
        run(.write(directory: directory, name: name, text: text), on: lane) { answer in
            if case .written(let error) = answer { completion(error) }
        }
    }

    /// Reads `name` in `directory` (at most `maximumSize` bytes) behind `lane`'s other work; nil: there is no such file.
    package func read(
        _ name: String, in directory: String, maximumSize: Int, on lane: HelperLane,
        completion: @escaping (Result<[UInt8]?, AtomicFile.Refused>) -> Void
    ) {
        run(.read(directory: directory, name: name, maximumSize: maximumSize), on: lane) { answer in
            if case .read(let result) = answer { completion(result) }
        }
    }

    /// Asks the helper for `request` behind the requests of its `lane`; `completion` runs on the loop, with
    /// the answer (always of the request's kind: a helper that answers otherwise is replaced) or, when the
    /// helper cannot answer, the request's failure. Sent once the turn's own replies and signals are out.
    private func run(_ request: HelperRequest, on lane: HelperLane, completion: @escaping (HelperAnswer) -> Void) {
        send(request, on: lane, quiet: false, completion: completion)
    }

    /// Asks for `request` without waiting for its answer: the helper answers only if it fails, and the
    /// failure goes to the lane's `onQuietFailure` handler. Nothing wakes the daemon for a success (a
    /// history written every 10 s). A request the helper could not take is lost with it, unsaid.
    package func runQuietly(_ request: HelperRequest, on lane: HelperLane) {
        send(request, on: lane, quiet: true) { _ in }
    }

    /// Who hears the failures of `lane`'s quiet requests.
    package func onQuietFailure(of lane: HelperLane, _ handler: @escaping (HelperAnswer) -> Void) {
        quietFailures[lane] = handler
    }

    private func send(
        _ request: HelperRequest, on lane: HelperLane, quiet: Bool, completion: @escaping (HelperAnswer) -> Void
    ) {
        nextID &+= 1
        let id = nextID
        guard let connection = connectionOrStart() else {
            if !quiet { loop.atEndOfTurn { completion(Self.failure(of: request)) } }
            return
        }
        if !quiet {
            let deadline = loop.now() + Self.limit(of: request)
            waiting[id] = Waiting(lane: lane, request: request, deadline: deadline, completion: completion)
            armDeadline(deadline)
        }
        connection.outbox += HelperWire.frame(id: id, lane: lane, quiet: quiet, request)
        guard connection.outbox.count <= Self.outboxLimit else {
            lose(connection, "it has not read \(connection.outbox.count) bytes of requests")
            return
        }
        askFlush()
    }

    private func askFlush() {
        guard !flushAsked else { return }
        flushAsked = true
        loop.atEndOfTurn { [weak self] in
            self?.loop.atEndOfTurn { [weak self] in
                guard let self else { return }
                flushAsked = false
                if let connection = self.connection { flush(connection) }
            }
        }
    }

    /// Waits (blocking, at most `limit`) until the helper has done every request of `lane`, quiet ones
    /// included (a barrier follows them); the answers read meanwhile are dropped, their completions not
    /// run. For a clean exit.
    package func drain(_ lane: HelperLane, within limit: Duration = .seconds(10)) {
        guard connection != nil else { return }
        run(.barrier, on: lane) { _ in }
        let deadline = MonotonicClock.now() + limit
        while let connection, waiting.values.contains(where: { $0.lane == lane }) {
            let now = MonotonicClock.now()
            guard now < deadline else { return }
            var poller = pollfd(fd: connection.socket.raw, events: Int16(POLLIN), revents: 0)
            if !connection.outbox.isEmpty { poller.events |= Int16(POLLOUT) }
            let waitMilliseconds = Int32(clamping: (deadline - now).milliseconds + 1)
            guard poll(&poller, 1, waitMilliseconds) >= 0 || errno == EINTR else { return }
            if poller.revents & Int16(POLLOUT) != 0 { flush(connection) }
            if poller.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { receive(connection, answering: false) }
        }
    }

    /// `replacing`: a helper the daemon stopped itself (a stuck lane), whose successor starts at once.
    private func connectionOrStart(replacing: Bool = false) -> Connection? {
        if let connection { return connection }
        reap()
        let now = loop.now()
        if !replacing, let lastStart, now &- lastStart < Self.restartPause { return nil }
        lastStart = now
        do throws(SystemError) {
            let connection = try start()
            self.connection = connection
            return connection
        } catch {
            onWarning(
                "cannot start the blocking helper (\(error)): lookups, traffic samples and saved files fail until it starts"
            )
            return nil
        }
    }

    private func start() throws(SystemError) -> Connection {
        var ends: [Int32] = [-1, -1]
        try Syscall.retrying("socketpair") {
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends)
        }
        let ours = Descriptor(owning: ends[0])
        let theirs = Descriptor(owning: ends[1])
        let flags = fcntl(ours.raw, F_GETFL)
        guard flags >= 0, fcntl(ours.raw, F_SETFL, flags | O_NONBLOCK) == 0 else { throw SystemError("fcntl") }
        let pid = try Syscall.retrying("posix_spawn \(Self.executable)") {
            CLinux_spawn_with_descriptor(Self.executable, "netobserverd", Self.argument, theirs.raw)
        }
        _ = consume theirs
        let connection = Connection(socket: ours, pid: pid)
        connection.source = try loop.watch(fd: connection.socket.raw, interest: .readable) {
            [weak self, unowned connection] _ in
            self?.receive(connection, answering: true)
        }
        return connection
    }

    /// Writes what the socket takes now; watches for room when some is left.
    private func flush(_ connection: Connection) {
        var sent = 0
        while sent < connection.outbox.count {
            let count = connection.outbox.withUnsafeBytes { bytes in
                Glibc.send(
                    connection.socket.raw, bytes.baseAddress.map { $0 + sent }, bytes.count - sent,
                    Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if count > 0 {
                sent += count
            } else if count < 0 && errno == EINTR {
                continue
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                lose(connection, "\(SystemError("send"))")
                return
            }
        }
        connection.outbox.removeFirst(sent)
        guard let source = connection.source else { return }
        let interest: IOEvents = connection.outbox.isEmpty ? .readable : [.readable, .writable]
        if source.interest != interest { try? loop.setInterest(source, interest) }
    }

    /// Reads what the helper sent and hands each whole answer to its request.
    private func receive(_ connection: Connection, answering: Bool) {
        if !connection.outbox.isEmpty { flush(connection) }
        guard self.connection === connection else { return }
        guard readAvailable(connection) else { return }
        var start = 0
        reading: while true {
            let body: Range<Int>
            switch HelperWire.next(in: connection.inbox, from: start) {
            case .body(let range): body = range
            case .incomplete: break reading
            case .outOfBounds:
                lose(connection, "it sent a frame out of bounds")
                return
            }
            guard let (id, lane, answer) = HelperWire.answer(connection.inbox[body]) else {
                lose(connection, "it sent a frame that does not decode")
                return
            }
            start = body.upperBound
            guard let entry = waiting[id], entry.lane == lane else {
                // Not waited for: a quiet request's failure.
                if answering, answer.isFailure { quietFailures[lane]?(answer) }
                guard self.connection === connection else { return }
                continue
            }
            guard answer.answers(entry.request) else {
                lose(connection, "it answered a request with another kind of answer")
                return
            }
            waiting[id] = nil
            if answering { entry.completion(answer) }
            // A completion may have stopped this helper (or started another).
            guard self.connection === connection else { return }
        }
        connection.inbox.removeFirst(start)
    }

    /// Appends what the socket holds (at most `readsPerTurn` chunks) to the inbox; false when the helper was lost.
    private func readAvailable(_ connection: Connection) -> Bool {
        // On the stack: a turn's reads cost no allocation of their own and no zeroing.
        withUnsafeTemporaryAllocation(byteCount: Self.readChunk, alignment: 1) { chunk in
            for _ in 0..<Self.readsPerTurn {
                let count = recv(connection.socket.raw, chunk.baseAddress, chunk.count, Int32(MSG_DONTWAIT))
                if count > 0 {
                    connection.inbox.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<count]))
                    if count < chunk.count { break }
                } else if count == 0 {
                    lose(connection, "it exited")
                    return false
                } else if errno == EINTR {
                    continue
                } else if errno == EAGAIN || errno == EWOULDBLOCK {
                    break
                } else {
                    lose(connection, "\(SystemError("recv"))")
                    return false
                }
            }
            return true
        }
    }

    /// The helper is gone or not to be trusted: it is stopped, and every request waiting gets its failure.
    private func lose(_ connection: Connection, _ why: String) {
        guard self.connection === connection else { return }
        stop(connection, why)
        let failed = waiting
        waiting.removeAll()
        for (_, entry) in failed.sorted(by: { $0.key < $1.key }) { entry.completion(Self.failure(of: entry.request)) }
    }

    private func stop(_ connection: Connection, _ why: String) {
        guard self.connection === connection else { return }
        self.connection = nil
        if let source = connection.source { loop.remove(source) }
        connection.source = nil
        kill(connection.pid, SIGKILL)
        unreaped.append(connection.pid)
        reap()
        onWarning("the blocking helper (PID \(connection.pid)) stopped: \(why); another starts on the next request")
    }

    private func armDeadline(_ deadline: Instant) {
        if let armed = deadlineTimer {
            guard deadline < armed.at else { return }
            loop.cancel(armed.timer)
        }
        deadlineTimer = (loop.schedule(at: deadline) { [weak self] in self?.deadlinesPassed() }, deadline)
    }

    /// Requests past their deadline are answered "timed out" here; the helper, whose lane is stuck on one, is replaced
    /// by another, which is handed every other request still waiting (each is idempotent: a lookup, a sample, a
    /// whole file written or read).
    private func deadlinesPassed() {
        deadlineTimer = nil
        let now = loop.now()
        let late = waiting.filter { $0.value.deadline <= now }.sorted { $0.key < $1.key }
        for (id, _) in late { waiting[id] = nil }
        if let connection, let first = late.first {
            let kept = waiting.sorted { $0.key < $1.key }
            waiting.removeAll()
            stop(
                connection,
                "its \(first.value.lane) lane did not answer within \(Self.limit(of: first.value.request).milliseconds) ms"
            )
            for (id, entry) in kept { resend(id, entry) }
        }
        for (_, entry) in late { entry.completion(Self.timedOut(entry.request)) }
        if let next = waiting.values.lazy.map(\.deadline).min() { armDeadline(next) }
    }

    /// A request handed to the helper that replaced the one it was asked of, or failed when none could start.
    private func resend(_ id: UInt64, _ entry: Waiting) {
        guard let connection = connectionOrStart(replacing: true) else {
            entry.completion(Self.failure(of: entry.request))
            return
        }
        waiting[id] = entry
        connection.outbox += HelperWire.frame(id: id, lane: entry.lane, quiet: false, entry.request)
        askFlush()
    }

    private func reap() {
        unreaped.removeAll { pid in
            var status: Int32 = 0
            return waitpid(pid, &status, WNOHANG) != 0
        }
    }

    /// What a request gets when its deadline passed.
    private static func timedOut(_ request: HelperRequest) -> HelperAnswer {
        let limit = "\(limit(of: request).milliseconds) ms"
        return switch request {
        case .resolve(let host, _):
            .resolved(.failure(.init(message: "cannot resolve \(host): no answer within \(limit)")))
        case .askDns: .dnsAnswered(DnsReply(outcome: .noAnswer("timed out after \(limit)"), transport: .unknown))
        case .sample, .write, .remove, .read, .barrier: failure(of: request)
        }
    }

    /// What a request gets when no helper answers it.
    private static func failure(of request: HelperRequest) -> HelperAnswer {
        let error = SystemError("blocking helper", errno: ECHILD)
        return switch request {
        case .resolve(let host, _):
            .resolved(.failure(.init(message: "cannot resolve \(host): the blocking helper stopped")))
        case .sample: .sampled(.init(result: .failure(.refused(error)), cost: .zero, dumpCost: .zero))
        case .write: .written(error)
        case .remove: .removed(false)
        case .read: .read(.failure(.init(description: "cannot be read: the blocking helper stopped")))
        case .barrier: .passed
        case .askDns: .dnsAnswered(DnsReply(outcome: .noAnswer("the blocking helper stopped"), transport: .unknown))
        }
    }
}
