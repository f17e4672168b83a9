import NetAddress
import Timekeeping

/// The reachability evaluation without I/O: parsed rtnetlink messages, overruns,
/// a new target and the clock in; requests for the kernel, "evaluate at the end
/// of this turn" and verdicts out. The driver owns the socket, the loop and sysfs
/// (through `classify`); the simulation drives the same core with a fake kernel.
///
/// Dumps (links, addresses, routes) fill the table; after an overrun nothing in it
/// can be trusted, so it is dumped again, the route lookups in flight are abandoned
/// (their answers may have been lost with the events) and asked again once the table
/// is whole. No verdict comes from a half-filled table.
///
/// One core serves every target (one netlink socket for all): each has its own
/// address, families, lookup and verdict, and every change costs one lookup per target.
/// Target 0 always exists; the unlabelled accessors are about it.
public struct ReachabilityCore: TimerTable {
    public typealias TargetID = Int

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
        case verdict(ReachabilityVerdict, target: TargetID)
        /// A router advertisement's option was not taken (malformed, or for no known interface): for the log.
        case ignoredRouterOption(String)
        /// The captive-portal API URIs routers announce (RFC 8910) changed: see `portalAPIs`.
        case portalAPIsChanged
        /// The NAT64 prefixes routers advertise (RFC 8781) changed: see `nat64Prefixes`.
        case nat64PrefixesChanged
        /// The links (their indexes and names) changed, the table whole: see `linkNames`.
        case linksChanged
    }

    /// What one target needs: its address, its lookup, its verdict.
    private struct TargetState {
        var address: IPAddress?
        var families: [IPFamily]
        var lookupSequence: UInt32?
        var lookupAddress: IPAddress?
        var previousInterface: Int32?
        var verdict: ReachabilityVerdict?
        var dirty = true
    }

    public struct Statistics: Equatable, Sendable {
        public var datagrams = 0
        public var messages = 0
        public var malformed = 0
        public var dropped = 0
        public var overruns = 0
        public var dumps = 0
        public var lookups = 0
        public var routerOptions = 0
        public var ignoredRouterOptions = 0
    }

    /// How long to wait before dumping again after the kernel refused a dump (EBUSY and the like).
    public static let dumpRetry = Duration.milliseconds(10)

    public private(set) var table = LinkTable()
    public private(set) var statistics = Statistics()
    private var targets: [TargetID: TargetState]
    /// Which target a lookup in flight is for.
    private var lookupOwners: [UInt32: TargetID] = [:]
    private let classify: (Link) -> InterfaceKind
    private let describeError: (Int32) -> String
    private var nextTargetID: TargetID = 0

    private var sequence: UInt32 = 0
    private var pendingDumps: [Dump] = []
    private var dumpSequence: UInt32?
    private var dumpRetryAt: Instant?
    /// The table is whole: every dump of the current round has ended.
    public private(set) var ready = false
    private var redumpNeeded = false
    /// Lookups given up after an overrun (their answers may come late, or never): ignored if they come.
    private var abandonedLookups: [UInt32] = []
    private var evaluationScheduled = false
    /// What each interface's routers announce (a NAT64 prefix, a captive-portal API) and which advertisements count.
    private var announcements: RouterAnnouncements
    /// Each interface's own IPv6 networks, as verdicts carry them: built once per change of the table, not per
    /// verdict.
    private var onLinkByIndex: [Int32: [OnLinkNetwork]] = [:]
    private var linkNamesSaid: [Int32: String] = [:]
    /// Router options that came while the table was being dumped, for a link it did not have yet (the latest
    /// `optionsHeldWhileDumping`): taken once it is whole, as they would have been had no overrun come first.
    private var optionsWhileDumping: [(index: Int32, bytes: [UInt8], source: IPAddress?)] = []
    public static let optionsHeldWhileDumping = 16
    private var outputs: [Output] = []

    /// `classify` tells a link's kind, `describeError` an errno's words (both ask the system).
    /// No target is built in: each one's owner adds it (`addTarget`), all alike.
    /// `linkLayerAddress` asks the kernel's neighbour table: an advertisement from a router's link-local address is
    /// taken when that address and the gateway's (a route set through the router's global address) are one card.
    public init(
        classify: @escaping (Link) -> InterfaceKind,
        describeError: @escaping (Int32) -> String = ReachabilityEvaluation.errorNumber,
        linkLayerAddress: @escaping (IPAddress, Int32) -> [UInt8]? = { _, _ in nil }
    ) {
        targets = [:]
        self.classify = classify
        self.describeError = describeError
        announcements = RouterAnnouncements(linkLayerAddress: linkLayerAddress)
    }

    // MARK: Targets

    /// A new target (no address yet: the default-route verdict with `families`).
    public mutating func addTarget(families: [IPFamily]) -> TargetID {
        let id = nextTargetID
        nextTargetID += 1
        targets[id] = TargetState(families: families)
        invalidate(id)
        return id
    }

    public mutating func removeTarget(_ id: TargetID) {
        guard let state = targets.removeValue(forKey: id) else { return }
        if let sequence = state.lookupSequence { lookupOwners[sequence] = nil }
    }

    public func target(_ id: TargetID) -> IPAddress? { targets[id]?.address }
    public func families(_ id: TargetID) -> [IPFamily] { targets[id]?.families ?? [] }
    public func verdict(_ id: TargetID) -> ReachabilityVerdict? { targets[id]?.verdict }
    public var targetIDs: [TargetID] { targets.keys.sorted() }

    public mutating func takeOutputs() -> [Output] {
        guard !outputs.isEmpty else { return [] }
        defer { outputs = [] }
        return outputs
    }

    /// Whether a route lookup is out and not yet answered.
    public var isLookingUp: Bool { !lookupOwners.isEmpty }

    /// The timers, each by name.
    public enum Timer: CaseIterable, Hashable, Sendable {
        /// What routers announced: a NAT64 prefix's lifetime, an advertisement held for its route, a router's
        /// route gone long enough.
        case announcements
        /// A dump the kernel refused (or that overran), asked again.
        case dumpRetry
    }

    public func deadline(_ timer: Timer) -> Instant? {
        switch timer {
        case .announcements: announcements.nextDeadline
        case .dumpRetry: dumpRetryAt
        }
    }

    /// When `handleTimeout` is due; nil when nothing waits for time.
    public var nextWakeup: Instant? { earliestDeadline }

    /// The NAT64 prefix each interface's routers advertise, until its lifetime ends: at most one per
    /// interface the table knows, so nothing a router sends grows it beyond the links.
    public var nat64: [Int32: (prefix: Nat64Prefix, until: Instant)] {
        announcements.prefixes.mapValues { ($0.prefix, $0.until) }
    }

    /// The NAT64 prefix each interface's routers advertise now, by index.
    public var nat64Prefixes: [Int32: Nat64Prefix] { announcements.prefixes.mapValues(\.prefix) }

    /// The NAT64 prefix advertised on the link named `interface`; nil when none.
    public func nat64Prefix(onInterfaceNamed interface: String) -> Nat64Prefix? {
        guard !interface.isEmpty, let link = table.links.values.first(where: { $0.name == interface }) else {
            return nil
        }
        return announcements.prefixes[link.index]?.prefix
    }

    /// The captive-portal API URI announced on each interface, by name (RFC 8910 has no lifetime: a later
    /// advertisement replaces it; the interface going down or its router's route gone for good ends it).
    public var portalAPIs: [String: String] {
        var byName: [String: String] = [:]
        for (index, portal) in announcements.portals {
            guard let link = table.links[index] else { continue }
            byName[link.name] = portal.uri
        }
        return byName
    }

    // MARK: Events

    /// Starts the first round of dumps.
    public mutating func start() {
        startDump()
    }

    public mutating func setTarget(_ new: IPAddress?, for id: TargetID) {
        guard var state = targets[id], new != state.address else { return }
        state.address = new
        state.previousInterface = nil
        // The old verdict was about another destination.
        state.verdict = nil
        targets[id] = state
        invalidate(id)
    }

    public mutating func setFamilies(_ new: [IPFamily], for id: TargetID) {
        guard targets[id] != nil, new != targets[id]?.families else { return }
        targets[id]?.families = new
        invalidate(id)
    }

    /// One datagram's messages, as `NetlinkParser` read them.
    public mutating func receive(_ messages: [RouteMessage], malformed: Int, now: Instant) {
        statistics.datagrams += 1
        statistics.malformed += malformed
        statistics.messages += messages.count
        var linksMayHaveChanged = false
        for message in messages {
            handle(message, now: now)
            switch message {
            case .newLink, .deleteLink, .done: linksMayHaveChanged = true
            default: break
            }
        }
        if linksMayHaveChanged, ready, table.linkNames != linkNamesSaid {
            linkNamesSaid = table.linkNames
            outputs.append(.linksChanged)
        }
    }

    /// The links by index, as last said with `.linksChanged` (a table being dumped again is never said).
    public var linkNames: [Int32: String] { linkNamesSaid }

    /// The socket said a message was too big or truncated: counted, nothing else.
    public mutating func dropped() {
        statistics.dropped += 1
    }

    /// Events were lost (ENOBUFS): nothing in the table can be trusted; dump again.
    public mutating func overrun() {
        statistics.overruns += 1
        for (sequence, id) in lookupOwners.sorted(by: { $0.key < $1.key }) {
            abandonedLookups.append(sequence)
            targets[id]?.lookupSequence = nil
        }
        lookupOwners = [:]
        if abandonedLookups.count > 8 + targets.count {
            abandonedLookups.removeFirst(abandonedLookups.count - 8 - targets.count)
        }
        for id in targets.keys { targets[id]?.dirty = true }
        if dumpSequence != nil {
            redumpNeeded = true
        } else {
            startDump()
        }
    }

    /// A request could not be sent.
    public mutating func requestFailed(_ request: Request, reason: String, now: Instant) {
        switch request {
        case .dump(_, let sequence) where sequence == dumpSequence:
            dumpSequence = nil
            dumpRetryAt = now &+ Self.dumpRetry
        case .routeLookup(let target, let sequence):
            guard let id = lookupOwners.removeValue(forKey: sequence) else { return }
            targets[id]?.lookupSequence = nil
            deliver(.unusable("cannot ask the kernel for a route to \(target): \(reason)"), to: id)
        default:
            break
        }
    }

    public mutating func handleTimeout(now: Instant) {
        for timer in Timer.allCases where isDue(timer, now: now) {
            switch timer {
            case .announcements:
                announced(announcements.timeout(table: table, now: now))
            case .dumpRetry:
                dumpRetryAt = nil
                startDump()
            }
        }
    }

    /// The coalesced evaluation asked for by `.evaluateAtEndOfTurn`: for every target that
    /// needs one, a route lookup, or the default-route verdict while it has no address.
    public mutating func evaluate() {
        evaluationScheduled = false
        guard ready else { return }
        for id in targets.keys.sorted() {
            guard var state = targets[id], state.dirty, state.lookupSequence == nil else { continue }
            state.dirty = false
            guard let address = state.address else {
                targets[id] = state
                deliver(
                    ReachabilityEvaluation.defaultRouteVerdict(
                        families: state.families, table: table, classify: classify), to: id)
                continue
            }
            let sequence = nextSequence()
            state.lookupSequence = sequence
            state.lookupAddress = address
            targets[id] = state
            lookupOwners[sequence] = id
            statistics.lookups += 1
            outputs.append(.send(.routeLookup(to: address, sequence: sequence)))
        }
    }

    // MARK: Internals

    private mutating func nextSequence() -> UInt32 {
        sequence = sequence == UInt32.max ? 1 : sequence + 1
        return sequence
    }

    private mutating func startDump() {
        table.removeAll()
        onLinkByIndex = [:]
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
            invalidateAll()
            return
        }
        let dump = pendingDumps.removeFirst()
        let sequence = nextSequence()
        dumpSequence = sequence
        outputs.append(.send(.dump(dump, sequence: sequence)))
    }

    private mutating func handle(_ message: RouteMessage, now: Instant) {
        switch message {
        case .done(let sequence) where sequence == dumpSequence:
            if redumpNeeded { startDump() } else { sendNextDump() }
            // The table is whole again: routes may have come and gone while it was not.
            if ready {
                announced(announcements.routesChanged(table: table, now: now))
                let held = optionsWhileDumping
                optionsWhileDumping = []
                for options in held { take(options.bytes, on: options.index, from: options.source, now: now) }
            }
        case .error(let sequence, _) where sequence == dumpSequence:
            // A dump the kernel refused: start over a little later.
            dumpSequence = nil
            redumpNeeded = true
            dumpRetryAt = now &+ Self.dumpRetry
        case .newRoute(let route, let sequence) where sequence != 0 && lookupOwners[sequence] != nil:
            finishLookup(sequence, .route(route))
        case .error(let sequence, let code) where lookupOwners[sequence] != nil:
            if code != 0 { finishLookup(sequence, .failed(errno: code)) }
        case .newRoute(_, let sequence) where sequence != 0 && abandonedLookups.contains(sequence),
            .error(let sequence, _) where abandonedLookups.contains(sequence):
            break
        case .routerOptions(let index, let bytes, let source):
            routerOptions(on: index, bytes, from: source, now: now)
        case .deleteLink(let index):
            announced(announcements.linkRemoved(index))
            if table.apply(message) { invalidateAll() }
        case .newRoute(let route, _) where route.isDefault && Int32(route.family) == IPAddress.familyIPv6,
            .deleteRoute(let route) where route.isDefault && Int32(route.family) == IPAddress.familyIPv6:
            if table.apply(message) { invalidateAll() }
            // Mid-dump the table is half filled: the dump's end looks again.
            if ready { announced(announcements.routesChanged(table: table, now: now)) }
        case .newLink(let link):
            if !link.isUp { announced(announcements.linkDown(link.index)) }
            let renamed = announcements.portals[link.index] != nil && table.links[link.index]?.name != link.name
            if table.apply(message) { invalidateAll() }
            if renamed { outputs.append(.portalAPIsChanged) }
        default:
            if table.apply(message) { invalidateAll() }
        }
    }

    /// The table changed: every target is evaluated again, and what was built from the table is built again.
    private mutating func invalidateAll() {
        onLinkByIndex = [:]
        for id in targets.keys { targets[id]?.dirty = true }
        invalidate()
    }

    private mutating func invalidate(_ id: TargetID) {
        targets[id]?.dirty = true
        invalidate()
    }

    private mutating func invalidate() {
        guard !evaluationScheduled else { return }
        evaluationScheduled = true
        outputs.append(.evaluateAtEndOfTurn)
    }

    private mutating func finishLookup(_ sequence: UInt32, _ lookup: RouteLookup) {
        guard let id = lookupOwners.removeValue(forKey: sequence), var state = targets[id] else { return }
        state.lookupSequence = nil
        // Mid-dump the table is half filled: the dump's end evaluates again.
        guard ready else {
            state.dirty = true
            targets[id] = state
            return
        }
        var new: ReachabilityVerdict?
        if let asked = state.lookupAddress, asked == state.address {
            new = ReachabilityEvaluation.verdict(
                target: asked, lookup: lookup, table: table,
                previousInterface: state.previousInterface, classify: classify,
                describeError: describeError)
            if case .route(let route) = lookup { state.previousInterface = route.outputInterface }
        }
        targets[id] = state
        if let new { deliver(new, to: id) }
        // Changes that arrived while the lookup was out need another one.
        if state.dirty { invalidate() }
    }

    /// A router advertisement's options (RFC 8781's PREF64, RFC 8910's captive portal): see `RouterAnnouncements` for
    /// which advertisements count.
    private mutating func routerOptions(on index: Int32, _ bytes: [UInt8], from source: IPAddress?, now: Instant) {
        statistics.routerOptions += 1
        if !ready, table.links[index] == nil {
            if optionsWhileDumping.count == Self.optionsHeldWhileDumping { optionsWhileDumping.removeFirst() }
            return optionsWhileDumping.append((index, bytes, source))
        }
        take(bytes, on: index, from: source, now: now)
    }

    private mutating func take(_ bytes: [UInt8], on index: Int32, from source: IPAddress?, now: Instant) {
        guard table.links[index] != nil else {
            return ignoreRouterOption("options for interface \(index), which is not known")
        }
        guard let source else {
            return ignoreRouterOption(
                "options on \(table.links[index]?.name ?? "\(index)") from an unknown source: no router can be told")
        }
        announced(announcements.advertised(on: index, bytes, from: source, table: table, now: now))
    }

    /// What changed in the routers' announcements reaches the service (its links hold them).
    private mutating func announced(_ changes: RouterAnnouncements.Changes) {
        for why in changes.ignored { ignoreRouterOption(why) }
        if changes.prefixes { outputs.append(.nat64PrefixesChanged) }
        if changes.portals { outputs.append(.portalAPIsChanged) }
    }

    private mutating func ignoreRouterOption(_ why: String) {
        statistics.ignoredRouterOptions += 1
        // A router flooding bad options gets a line at the 1st, 2nd, 4th, 8th … of them.
        let count = statistics.ignoredRouterOptions
        if count & (count - 1) == 0 { outputs.append(.ignoredRouterOption(why + " (ignored: \(count) so far)")) }
    }

    private mutating func onLinkIPv6(_ index: Int32) -> [OnLinkNetwork] {
        guard index != 0 else { return [] }
        if let known = onLinkByIndex[index] { return known }
        let networks = table.addresses(on: index, family: IPAddress.familyIPv6)
            .map { OnLinkNetwork(address: $0.address, length: $0.prefixLength) }
            .sorted { $0.address.bytes.lexicographicallyPrecedes($1.address.bytes) }
        onLinkByIndex[index] = networks
        return networks
    }

    private mutating func deliver(_ verdict: ReachabilityVerdict, to id: TargetID) {
        var new = verdict
        new.destination = targets[id]?.address?.bytes
        new.onLinkIPv6 = onLinkIPv6(verdict.interfaceIndex)
        new.routedFamilies = table.routedFamilies
        guard targets[id] != nil, new != targets[id]?.verdict else { return }
        targets[id]?.verdict = new
        outputs.append(.verdict(new, target: id))
    }
}
