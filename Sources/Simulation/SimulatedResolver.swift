import NetAddress
import NetCore
import ProbeRules
import Timekeeping

/// The daemon's resolver as the simulation plays it: one thread for every target, taking
/// lookups in `LookupQueue`'s order (HostResolver's), each answered as the resolver behaves
/// when it starts. It keeps what the invariants need: a lookup of a target whose lookups go first
/// must start by the end of the lookup under way when it was asked, and no target has two waiting.
struct SimulatedResolver {
    struct Lookup: Sendable {
        let target: Int
        /// The target's lookups go before the others' (the default target's).
        let first: Bool
        let host: String
        let generation: UInt64
    }

    /// A lookup the thread has started, with its answer and when it comes.
    struct Started {
        let lookup: Lookup
        let answer: Result<[IPAddress], ResolverFailure>
        let at: Instant
    }

    var behaviour: Scenario.ResolverBehaviour = .answering
    private var queue = LookupQueue<Lookup>()
    private var underWay = false
    /// When the lookup under way ends.
    private var endsAt = Instant.origin
    private var asked: UInt64 = 0
    /// By when the waiting lookup of the target whose lookups go first must start; nil when it has none waiting.
    private(set) var firstMustStartBy: Instant?
    private(set) var lastFirstStart = Instant.origin

    /// Queues a lookup for a name (an address needs none); a violation when the queue broke its bounds.
    mutating func ask(_ lookup: Lookup, targets: Int, now: Instant) -> String? {
        asked += 1
        _ = queue.add(.init(id: asked, owner: UInt64(lookup.target), first: lookup.first, payload: lookup))
        if lookup.first { firstMustStartBy = underWay ? (firstMustStartBy ?? endsAt) : now }
        let owner = UInt64(lookup.target)
        guard queue.entries.count > targets || queue.entries.contains(where: { $0.owner == owner && $0.id != asked })
        else { return nil }
        return "\(queue.entries.count) lookups wait for the resolver, more than one for target \(lookup.target)"
    }

    /// The target's lookups not yet started are dropped (the one under way goes on).
    mutating func cancel(target: Int, first: Bool) {
        queue.remove(owner: UInt64(target))
        if first { firstMustStartBy = nil }
    }

    /// The lookup under way answered: the thread is free.
    mutating func finished() {
        underWay = false
    }

    /// The thread takes the next lookup if it is free; `late` says how long one that goes first waited too long.
    mutating func startNext(
        now: Instant, families: [IPFamily], random: inout SeededRandom
    ) -> (started: Started, late: Duration?)? {
        guard !underWay, let next = queue.next() else { return nil }
        var late: Duration?
        if next.payload.first {
            if let by = firstMustStartBy, now > by { late = now - by }
            firstMustStartBy = nil
            lastFirstStart = now
        }
        let (answer, delay) = Self.answer(next.payload.host, behaviour, families: families, random: &random)
        underWay = true
        endsAt = now + delay
        return (Started(lookup: next.payload, answer: answer, at: endsAt), late)
    }

    /// What the resolver says of `host`, and after how long: glibc's own timeout (5 to 10 s) for a name nobody answers.
    private static func answer(
        _ host: String, _ behaviour: Scenario.ResolverBehaviour, families: [IPFamily],
        random: inout SeededRandom
    ) -> (Result<[IPAddress], ResolverFailure>, Duration) {
        let hung = (
            ResolverFailure(message: "cannot resolve \(host): no answer"),
            Duration.seconds(5) + .nanoseconds(random.next() % 5_000_000_000)
        )
        var delay = Duration.nanoseconds(random.next() % 30_000_000)
        switch host {
        case "a.test", "b.test":
            switch behaviour {
            case .answering: break
            case .slow(let milliseconds): delay = .milliseconds(milliseconds)
            case .failing(let why): return (.failure(ResolverFailure(message: "cannot resolve \(host): \(why)")), delay)
            case .hanging: return (.failure(hung.0), hung.1)
            }
            return (.success(Simulation.addresses(of: host, families: families)), delay)
        case "hang.test":
            return (.failure(hung.0), hung.1)
        default:
            return (.failure(ResolverFailure(message: "cannot resolve \(host): Name or service not known")), delay)
        }
    }
}
