import CLinux
import EventLoop
import Glibc
#if canImport(NetCore)
import NetCore
#endif

/// Knows at once whether the kernel can route to the target, and over what.
///
/// One NETLINK_ROUTE socket, subscribed to link, address and route events,
/// carries the initial dumps, the events and the route lookups, so they
/// arrive in the order the kernel produced them. Events are coalesced into one
/// route lookup per loop turn; the verdict is delivered only when it changes.
public final class ReachabilityEngine {
    public struct Statistics: Equatable, Sendable {
        public var datagrams = 0
        public var messages = 0
        public var malformed = 0
        public var dropped = 0
        public var overruns = 0
        public var dumps = 0
        public var lookups = 0
    }

    private let loop: MainLoop
    private let socket: NetlinkSocket
    private var source: IOSource?
    private let classifier: InterfaceClassifier
    /// Called on the loop when the verdict changes.
    public var onChange: (ReachabilityVerdict) -> Void

    public private(set) var table = LinkTable()
    public private(set) var verdict: ReachabilityVerdict?
    public private(set) var statistics = Statistics()

    private var sequence: UInt32 = 0
    private var pendingDumps: [Int32] = []
    private var dumpSequence: UInt32?
    private var ready = false
    private var redumpNeeded = false
    private var lookupSequence: UInt32?
    /// Lookups given up after an overrun (their answers may come late, or never): ignored if they come.
    private var abandonedLookups: [UInt32] = []
    private var lookupTarget: IPAddress?
    private var previousInterface: Int32?
    private var evaluationScheduled = false
    private var dirty = true

    /// The address to route to; nil until the host resolves.
    public var target: IPAddress? {
        didSet {
            guard target != oldValue else { return }
            previousInterface = nil
            // The old verdict was about another destination.
            verdict = nil
            invalidate()
        }
    }

    /// The families whose default routes count while there is no target.
    public var families: [Int32] = [AF_INET, AF_INET6] {
        didSet { if families != oldValue { invalidate() } }
    }

    public init(loop: MainLoop, classifier: InterfaceClassifier = InterfaceClassifier(),
                onChange: @escaping (ReachabilityVerdict) -> Void) throws(SystemError) {
        self.loop = loop
        self.classifier = classifier
        self.onChange = onChange
        socket = try NetlinkSocket(groups: CLinux_RTMGRP_LINK | CLinux_RTMGRP_IPV4_IFADDR | CLinux_RTMGRP_IPV6_IFADDR
                                   | CLinux_RTMGRP_IPV4_ROUTE | CLinux_RTMGRP_IPV6_ROUTE)
        for group in [RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE] {
            var number = Int32(group.rawValue)
            _ = setsockopt(socket.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &number, socklen_t(MemoryLayout<Int32>.size))
        }
        source = try loop.watch(fd: socket.fd, interest: .readable) { [unowned self] _ in readAvailable() }
        try startDump()
    }

    deinit {
        if let source { loop.remove(source) }
    }

    // MARK: Dumps

    private func nextSequence() -> UInt32 {
        sequence = sequence == UInt32.max ? 1 : sequence + 1
        return sequence
    }

    private func startDump() throws(SystemError) {
        table.removeAll()
        ready = false
        redumpNeeded = false
        statistics.dumps += 1
        pendingDumps = [Int32(RTM_GETLINK), Int32(RTM_GETADDR), Int32(RTM_GETROUTE)]
        try sendNextDump()
    }

    private func sendNextDump() throws(SystemError) {
        guard !pendingDumps.isEmpty else {
            dumpSequence = nil
            ready = true
            invalidate()
            return
        }
        let type = pendingDumps.removeFirst()
        let sequence = nextSequence()
        dumpSequence = sequence
        try socket.send(NetlinkRequest.dump(type, sequence: sequence))
    }

    // MARK: Receiving

    private func readAvailable() {
        // Bounded per turn so other sources get their share; level-triggered epoll brings us back.
        for _ in 0..<64 {
            switch socket.receive() {
            case .wouldBlock:
                return
            case .dropped:
                statistics.dropped += 1
            case .overrun:
                statistics.overruns += 1
                overrun()
            case .datagram(let bytes):
                statistics.datagrams += 1
                let parsed = NetlinkParser.parse(aligned: bytes)
                statistics.malformed += parsed.malformed
                statistics.messages += parsed.messages.count
                for message in parsed.messages { handle(message) }
            }
        }
    }

    /// Events were lost: nothing in the tables can be trusted; dump again. The answer to
    /// a route lookup may have been lost with them: forget it, and ask again once the
    /// tables are whole.
    private func overrun() {
        if let sequence = lookupSequence {
            abandonedLookups.append(sequence)
            if abandonedLookups.count > 8 { abandonedLookups.removeFirst() }
            lookupSequence = nil
        }
        dirty = true
        if dumpSequence != nil {
            redumpNeeded = true
        } else {
            do { try startDump() } catch { redumpNeeded = true }
        }
    }

    private func handle(_ message: RouteMessage) {
        switch message {
        case .done(let sequence) where sequence == dumpSequence:
            if redumpNeeded {
                try? startDump()
            } else {
                try? sendNextDump()
            }
        case .error(let sequence, let code) where sequence == dumpSequence:
            // A dump the kernel refused (EBUSY and the like): start over.
            _ = code
            redumpNeeded = true
            loop.schedule(after: 10_000_000) { [weak self] in try? self?.startDump() }
            dumpSequence = nil
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

    // MARK: Evaluation

    private func invalidate() {
        dirty = true
        guard !evaluationScheduled else { return }
        evaluationScheduled = true
        loop.atEndOfTurn { [weak self] in
            guard let self else { return }
            evaluationScheduled = false
            evaluate()
        }
    }

    private func evaluate() {
        guard ready, dirty, lookupSequence == nil else { return }
        dirty = false
        guard let target else {
            deliver(ReachabilityEvaluation.defaultRouteVerdict(families: families, table: table, classify: classifier.classify))
            return
        }
        let sequence = nextSequence()
        do {
            try socket.send(NetlinkRequest.routeLookup(to: target, sequence: sequence))
            lookupSequence = sequence
            lookupTarget = target
            statistics.lookups += 1
        } catch {
            deliver(.unusable("cannot ask the kernel for a route to \(target): \(error)"))
        }
    }

    private func finishLookup(_ lookup: RouteLookup) {
        lookupSequence = nil
        // Mid-dump the tables are half filled: the dump's end evaluates again.
        guard ready else {
            dirty = true
            return
        }
        if let target = lookupTarget, target == self.target {
            let verdict = ReachabilityEvaluation.verdict(target: target, lookup: lookup, table: table,
                                                         previousInterface: previousInterface, classify: classifier.classify)
            if case .route(let route) = lookup { previousInterface = route.outputInterface }
            deliver(verdict)
        }
        // Changes that arrived while the lookup was out need another one.
        if dirty { invalidate() }
    }

    private func deliver(_ new: ReachabilityVerdict) {
        guard new != verdict else { return }
        verdict = new
        onChange(new)
    }
}
