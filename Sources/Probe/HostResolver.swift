import EventLoop
import Glibc
import NetAddress
import NetCore
import ProbeRules
import Synchronization

/// Resolves host names off the loop — in the daemon's blocking helper (`asking`), or on a
/// worker thread — and answers on the loop, so a slow resolver never stalls D-Bus or the
/// probes. One resolver serves every target: each asks under its own owner number and
/// cancels only its own lookups.
public final class HostResolver {
    public typealias Failure = ResolverFailure

    public typealias Lookup = @Sendable (_ host: String, _ family: Int32) -> Result<[IPAddress], Failure>

    /// Looks `host` up elsewhere and answers on the loop; asked for one lookup at a time in each of two lanes: the
    /// lookups asked `first` (the default target's) in one, so none waits behind another target's under way, and
    /// whatever comes next in the other.
    public typealias Asking = (
        _ host: String, _ family: Int32, _ first: Bool,
        _ answer: @escaping (Result<[IPAddress], Failure>) -> Void
    ) -> Void

    private struct Answer: Sendable {
        let id: UInt64
        let result: Result<[IPAddress], Failure>
    }

    private let worker: WorkerThread?
    private let lookup: Lookup
    private let asking: Asking?
    /// A lookup asked of `asking` and not answered yet, in each lane (the `first` lookups', the others').
    private var asked = false
    private var askedFirst = false
    private var channel: LoopChannel<Answer>!
    private struct Pending {
        let owner: UInt64
        let ticket: Ticket
        let completion: (Result<[IPAddress], Failure>) -> Void
    }
    private var pending: [UInt64: Pending] = [:]
    private var nextID: UInt64 = 0
    private var nextOwner: UInt64 = 0
    /// The lookups not yet started, shared with the worker, which takes the next one from it.
    private let queue = SharedQueue()

    private final class SharedQueue: Sendable {
        let lookups = Mutex(LookupQueue<Job>())
    }

    private struct Job: Sendable {
        let host: String
        let family: Int32
        let ticket: Ticket
    }

    /// A cancelled lookup not yet started is skipped by the worker, so a new Host never
    /// waits behind a queue of stale lookups (only behind the one under way).
    private final class Ticket: Sendable {
        let cancelled = Atomic<Bool>(false)
    }

    private let loop: MainLoop

    public init(loop: MainLoop, lookup: @escaping Lookup = HostResolver.systemLookup) throws(SystemError) {
        self.loop = loop
        worker = try WorkerThread()
        self.lookup = lookup
        asking = nil
        channel = try LoopChannel(loop: loop) { [unowned self] answer in
            pending.removeValue(forKey: answer.id)?.completion(answer.result)
        }
    }

    /// Looks names up with `asking` (the daemon's helper process), one at a time, the next one
    /// chosen when the last is answered.
    public init(loop: MainLoop, asking: @escaping Asking) throws(SystemError) {
        self.loop = loop
        worker = nil
        lookup = Self.systemLookup
        self.asking = asking
        channel = try LoopChannel(loop: loop) { [unowned self] answer in
            pending.removeValue(forKey: answer.id)?.completion(answer.result)
        }
    }

    /// A number to ask and cancel under, for one more user of this resolver.
    public func newOwner() -> UInt64 {
        nextOwner += 1
        return nextOwner
    }

    /// Resolves `host` for `family` (AF_UNSPEC, AF_INET or AF_INET6); `completion`
    /// runs on the loop with the addresses in resolver order. `first`: before every lookup
    /// not asked so (the default target's). A lookup of `owner` still waiting is replaced,
    /// its completion never run: each owner has at most one lookup waiting, so no target's
    /// lookups pile up behind a resolver that hangs.
    public func resolve(
        _ host: String, family: Int32, owner: UInt64 = 0, first: Bool = false,
        completion: @escaping (Result<[IPAddress], Failure>) -> Void
    ) {
        nextID += 1
        let id = nextID
        let ticket = Ticket()
        pending[id] = Pending(owner: owner, ticket: ticket, completion: completion)
        let sender = channel.sender
        // An address needs no lookup, so it never waits behind one (answered next turn, like any answer).
        if let literal = IPAddress(host), family == AF_UNSPEC || literal.family == family {
            sender.send(Answer(id: id, result: .success([literal])))
            return
        }
        let entry = LookupQueue.Entry(
            id: id, owner: owner, first: first, payload: Job(host: host, family: family, ticket: ticket))
        if let replaced = queue.lookups.withLock({ $0.add(entry) }) {
            pending[replaced]?.ticket.cancelled.store(true, ordering: .releasing)
            pending[replaced] = nil
        }
        let lookup = self.lookup
        let queue = self.queue
        guard let worker else {
            // Asked once the turn's signals are out (a new Host's `unknown` first, then the lookup).
            loop.atEndOfTurn { [weak self] in self?.askNext() }
            return
        }
        // One job per lookup queued; each starts whichever lookup is next when it runs. The thread is woken once
        // the turn's signals are out (a new Host's `unknown` first, then the lookup).
        worker.async(afterTurnOf: loop) {
            guard let next = queue.lookups.withLock({ $0.next() }),
                !next.payload.ticket.cancelled.load(ordering: .acquiring)
            else { return }
            sender.send(Answer(id: next.id, result: lookup(next.payload.host, next.payload.family)))
        }
    }

    /// Asks `asking` for the next lookups not cancelled, one per lane not busy: the `first` lane takes only lookups
    /// asked `first`; the other takes whatever is next (a `first` one too, while its own lane is busy).
    private func askNext() {
        guard asking != nil else { return }
        if !askedFirst, let next = nextLive(firstOnly: true) { ask(next, first: true) }
        if !asked, let next = nextLive(firstOnly: false) { ask(next, first: false) }
    }

    private func nextLive(firstOnly: Bool) -> LookupQueue<Job>.Entry? {
        while let next = queue.lookups.withLock({ $0.next(firstOnly: firstOnly) }) {
            if !next.payload.ticket.cancelled.load(ordering: .acquiring) { return next }
        }
        return nil
    }

    private func ask(_ next: LookupQueue<Job>.Entry, first: Bool) {
        guard let asking else { return }
        if first { askedFirst = true } else { asked = true }
        asking(next.payload.host, next.payload.family, first) { [weak self] result in
            guard let self else { return }
            if first { askedFirst = false } else { asked = false }
            pending.removeValue(forKey: next.id)?.completion(result)
            askNext()
        }
    }

    /// Forgets the answers still to come (a new Host); lookups not yet started are skipped.
    public func cancelAll(owner: UInt64 = 0) {
        queue.lookups.withLock { $0.remove(owner: owner) }
        for (id, lookup) in pending where lookup.owner == owner {
            lookup.ticket.cancelled.store(true, ordering: .releasing)
            pending[id] = nil
        }
    }

    /// getaddrinfo(3), one address per distinct IP, in the resolver's order.
    public static let systemLookup: Lookup = { host, family in
        var hints = addrinfo()
        hints.ai_family = family
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            let text = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            return .failure(Failure(message: "cannot resolve \(host): \(text)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry = list
        while let current = entry {
            if let socketAddress = current.pointee.ai_addr,
                let address = IPAddress(
                    socketAddress: UnsafeRawPointer(socketAddress), length: Int(current.pointee.ai_addrlen))?
                    .namingZone(),
                !addresses.contains(address)
            {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        return addresses.isEmpty
            ? .failure(Failure(message: "cannot resolve \(host): no address")) : .success(addresses)
    }
}
