import NetAddress
import ProbeRules
import Timekeeping

/// One link's neighbour checks (INTERFACE.md "The neighbour check"), shared by every target path routed over it:
/// one check per gateway at a time, joined by every path that asks while it runs; a path's routine recheck takes
/// a `reachable` answer another path got within `reuse` instead of sending. A suspicion, a new next hop or a resume
/// asks afresh. So a healthy network sees at most one ARP or Neighbor Solicitation exchange per gateway a minute,
/// whatever the number of targets.
public struct LinkNeighbors: Sendable {
    public static let reuse = Duration.seconds(60)

    public typealias PathKey = ServiceCore.PathKey

    public enum Action: Equatable, Sendable {
        /// Ask `gateway` from `source` (up to 3 tries 200 ms apart); answer with `answered(gateway:number:)`.
        case check(gateway: IPAddress, source: String, number: UInt64)
        /// Check `number` of `gateway` is no longer wanted.
        case cancel(gateway: IPAddress, number: UInt64)
        /// `path`'s ask `generation` is answered by the check that went out at `checkedAt`.
        case answer(PathKey, generation: UInt64, NeighborAnswer, checkedAt: Instant)
    }

    private struct Running: Sendable {
        var number: UInt64
        var startedAt: Instant
        /// Each waiting path's generation of its ask.
        var waiting: [PathKey: UInt64]
    }

    private var running: [IPAddress: Running] = [:]
    /// Each gateway's last answer and when its check went out, kept for `reuse` (bounded by the gateways asked).
    private var answered: [IPAddress: (answer: NeighborAnswer, checkedAt: Instant)] = [:]
    private var numbers: UInt64 = 0
    /// Checks that went out (for tests and the simulation's figures).
    public private(set) var started = 0

    public init() {}

    /// Whether no check runs: nothing here is waited for.
    public var isIdle: Bool { running.isEmpty }

    /// `path` asks `gateway` (ask `generation`; `routine`: the healthy recheck). Whatever it asked before is
    /// withdrawn: a path waits for one answer at a time.
    public mutating func ask(
        _ path: PathKey, gateway: IPAddress, source: String, generation: UInt64, routine: Bool, now: Instant
    ) -> [Action] {
        var actions = withdraw(path)
        answered = answered.filter { now - $0.value.checkedAt < Self.reuse }
        if routine, running[gateway] == nil, let last = answered[gateway], last.answer == .reachable {
            actions.append(.answer(path, generation: generation, last.answer, checkedAt: last.checkedAt))
            return actions
        }
        if running[gateway] == nil {
            numbers &+= 1
            started += 1
            running[gateway] = Running(number: numbers, startedAt: now, waiting: [:])
            actions.append(.check(gateway: gateway, source: source, number: numbers))
        }
        running[gateway]?.waiting[path] = generation
        return actions
    }

    /// Check `number` of `gateway` answered `answer`: every path waiting for it hears so, in order.
    public mutating func answered(gateway: IPAddress, number: UInt64, _ answer: NeighborAnswer) -> [Action] {
        guard let check = running[gateway], check.number == number else { return [] }
        running[gateway] = nil
        answered[gateway] = (answer, check.startedAt)
        return check.waiting.sorted { $0.key < $1.key }.map {
            .answer($0.key, generation: $0.value, answer, checkedAt: check.startedAt)
        }
    }

    /// `path` waits for nothing any more; a check nobody waits for is cancelled.
    public mutating func withdraw(_ path: PathKey) -> [Action] {
        var actions: [Action] = []
        for (gateway, check) in running.sorted(by: { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) })
        where check.waiting[path] != nil {
            running[gateway]?.waiting[path] = nil
            if running[gateway]?.waiting.isEmpty == true {
                running[gateway] = nil
                actions.append(.cancel(gateway: gateway, number: check.number))
            }
        }
        return actions
    }

    /// Every path of target `target` waits for nothing any more.
    public mutating func withdraw(target: Int) -> [Action] {
        let paths = Set(running.values.flatMap { $0.waiting.keys.filter { $0.target == target } })
        return paths.sorted().flatMap { withdraw($0) }
    }

    /// The link is gone: every check with it.
    public mutating func end() -> [Action] {
        defer { running = [:] }
        return running.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }.map {
            .cancel(gateway: $0.key, number: $0.value.number)
        }
    }
}
