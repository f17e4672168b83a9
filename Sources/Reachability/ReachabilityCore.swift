#if canImport(NetCore)
import NetCore
#endif

/// The reachability evaluation without I/O: parsed rtnetlink messages, overruns,
/// a new target and the clock in; requests for the kernel, "evaluate at the end
/// of this turn" and verdicts out. The driver owns the socket, the loop and sysfs
/// (through `classify`); the simulation drives the same core with a fake kernel.
///
/// Dumps (links, addresses, routes) fill the table; after an overrun nothing in it
/// can be trusted, so it is dumped again, the route lookup in flight is abandoned
/// (its answer may have been lost with the events) and asked again once the table
/// is whole. No verdict comes from a half-filled table.
public struct ReachabilityCore {
    public enum Dump: Equatable, Sendable, CaseIterable {
        case links, addresses, routes
    }

    public enum Request: Equatable, Sendable {
        case dump(Dump, sequence: UInt32)
        case routeLookup(to: IPAddress, sequence: UInt32)
    }

    public enum Output: Equatable, Sendable {
        case send(Request)
        /// Call `evaluate()` once everything ready in this loop turn has been handled.
        case evaluateAtEndOfTurn
        case verdict(ReachabilityVerdict)
    }

    public struct Statistics: Equatable, Sendable {
        public var datagrams = 0
        public var messages = 0
        public var malformed = 0
        public var dropped = 0
        public var overruns = 0
        public var dumps = 0
        public var lookups = 0
    }

    /// How long to wait before dumping again after the kernel refused a dump (EBUSY and the like).
    public static let dumpRetryNanoseconds: UInt64 = 10_000_000

    public private(set) var table = LinkTable()
    public private(set) var verdict: ReachabilityVerdict?
    public private(set) var statistics = Statistics()
    /// The address to route to; nil until the host resolves.
    public private(set) var target: IPAddress?
    /// The families (AF_INET, AF_INET6) whose default routes count while there is no target.
    public private(set) var families: [Int32]
    private let classify: (Link) -> InterfaceKind

    private var sequence: UInt32 = 0
    private var pendingDumps: [Dump] = []
    private var dumpSequence: UInt32?
    private var dumpRetryAt: UInt64?
    /// The table is whole: every dump of the current round has ended.
    public private(set) var ready = false
    private var redumpNeeded = false
    private var lookupSequence: UInt32?
    /// Lookups given up after an overrun (their answers may come late, or never): ignored if they come.
    private var abandonedLookups: [UInt32] = []
    private var lookupTarget: IPAddress?
    private var previousInterface: Int32?
    private var evaluationScheduled = false
    private var dirty = true
    private var outputs: [Output] = []

    public init(families: [Int32], classify: @escaping (Link) -> InterfaceKind) {
        self.families = families
        self.classify = classify
    }

    public mutating func takeOutputs() -> [Output] {
        guard !outputs.isEmpty else { return [] }
        defer { outputs = [] }
        return outputs
    }

    /// Whether a route lookup is out and not yet answered.
    public var isLookingUp: Bool { lookupSequence != nil }

    /// When `handleTimeout` is due; nil when nothing waits for time.
    public var nextWakeup: UInt64? { dumpRetryAt }

    // MARK: Events

    /// Starts the first round of dumps.
    public mutating func start() {
        startDump()
    }

    public mutating func setTarget(_ new: IPAddress?) {
        guard new != target else { return }
        target = new
        previousInterface = nil
        // The old verdict was about another destination.
        verdict = nil
        invalidate()
    }

    public mutating func setFamilies(_ new: [Int32]) {
        guard new != families else { return }
        families = new
        invalidate()
    }

    /// One datagram's messages, as `NetlinkParser` read them.
    public mutating func receive(_ messages: [RouteMessage], malformed: Int, now: UInt64) {
        statistics.datagrams += 1
        statistics.malformed += malformed
        statistics.messages += messages.count
        for message in messages { handle(message, now: now) }
    }

    /// The socket said a message was too big or truncated: counted, nothing else.
    public mutating func dropped() {
        statistics.dropped += 1
    }

    /// Events were lost (ENOBUFS): nothing in the table can be trusted; dump again.
    public mutating func overrun() {
        statistics.overruns += 1
        if let sequence = lookupSequence {
            abandonedLookups.append(sequence)
            if abandonedLookups.count > 8 { abandonedLookups.removeFirst() }
            lookupSequence = nil
        }
        dirty = true
        if dumpSequence != nil {
            redumpNeeded = true
        } else {
            startDump()
        }
    }

    /// A request could not be sent.
    public mutating func requestFailed(_ request: Request, reason: String, now: UInt64) {
        switch request {
        case .dump(_, let sequence) where sequence == dumpSequence:
            dumpSequence = nil
            dumpRetryAt = now &+ Self.dumpRetryNanoseconds
        case .routeLookup(let target, let sequence) where sequence == lookupSequence:
            lookupSequence = nil
            deliver(.unusable("cannot ask the kernel for a route to \(target): \(reason)"))
        default:
            break
        }
    }

    public mutating func handleTimeout(now: UInt64) {
        guard let at = dumpRetryAt, at <= now else { return }
        dumpRetryAt = nil
        startDump()
    }

    /// The coalesced evaluation asked for by `.evaluateAtEndOfTurn`: a route lookup for
    /// the target, or the default-route verdict while there is none.
    public mutating func evaluate() {
        evaluationScheduled = false
        guard ready, dirty, lookupSequence == nil else { return }
        dirty = false
        guard let target else {
            deliver(ReachabilityEvaluation.defaultRouteVerdict(families: families, table: table, classify: classify))
            return
        }
        let sequence = nextSequence()
        lookupSequence = sequence
        lookupTarget = target
        statistics.lookups += 1
        outputs.append(.send(.routeLookup(to: target, sequence: sequence)))
    }

    // MARK: Internals

    private mutating func nextSequence() -> UInt32 {
        sequence = sequence == UInt32.max ? 1 : sequence + 1
        return sequence
    }

    private mutating func startDump() {
        table.removeAll()
        ready = false
        redumpNeeded = false
        dumpRetryAt = nil
        statistics.dumps += 1
        pendingDumps = Dump.allCases
        sendNextDump()
    }

    private mutating func sendNextDump() {
        guard !pendingDumps.isEmpty else {
            dumpSequence = nil
            ready = true
            invalidate()
            return
        }
        let dump = pendingDumps.removeFirst()
        let sequence = nextSequence()
        dumpSequence = sequence
        outputs.append(.send(.dump(dump, sequence: sequence)))
    }

    private mutating func handle(_ message: RouteMessage, now: UInt64) {
        switch message {
        case .done(let sequence) where sequence == dumpSequence:
            if redumpNeeded { startDump() } else { sendNextDump() }
        case .error(let sequence, _) where sequence == dumpSequence:
            // A dump the kernel refused: start over a little later.
            dumpSequence = nil
            redumpNeeded = true
            dumpRetryAt = now &+ Self.dumpRetryNanoseconds
        case .newRoute(let route, let sequence) where sequence != 0 && sequence == lookupSequence:
            finishLookup(.route(route))
        case .error(let sequence, let code) where sequence == lookupSequence:
            if code != 0 { finishLookup(.failed(errno: code)) }
        case .newRoute(_, let sequence) where sequence != 0 && abandonedLookups.contains(sequence),
             .error(let sequence, _) where abandonedLookups.contains(sequence):
            break
        default:
            if table.apply(message) { invalidate() }
        }
    }

    private mutating func invalidate() {
        dirty = true
        guard !evaluationScheduled else { return }
        evaluationScheduled = true
        outputs.append(.evaluateAtEndOfTurn)
    }

    private mutating func finishLookup(_ lookup: RouteLookup) {
        lookupSequence = nil
        // Mid-dump the table is half filled: the dump's end evaluates again.
        guard ready else {
            dirty = true
            return
        }
        if let target = lookupTarget, target == self.target {
            let new = ReachabilityEvaluation.verdict(target: target, lookup: lookup, table: table,
                                                     previousInterface: previousInterface, classify: classify)
            if case .route(let route) = lookup { previousInterface = route.outputInterface }
            deliver(new)
        }
        // Changes that arrived while the lookup was out need another one.
        if dirty { invalidate() }
    }

    private mutating func deliver(_ new: ReachabilityVerdict) {
        guard new != verdict else { return }
        verdict = new
        outputs.append(.verdict(new))
    }
}
