import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// The monitor's combination of name resolution, the route and the probes, without
/// I/O: settings, resolver answers, route verdicts, probe reports and the clock in;
/// "resolve", "point the engines at this address", "the route came back" and "the
/// state changed" out. `state(previous:)` applies StatusRules to what it knows.
public struct MonitorCore: TimerTable {
    public enum Output: Equatable, Sendable {
        /// Look `host` up off the loop; answer with `resolved(generation:…)`.
        case resolve(host: String, family: AddressFamily, generation: UInt64)
        /// Lookups for an earlier Host will be ignored: drop them.
        case cancelResolutions
        /// Point both engines at this address (nil: none).
        case retarget(IPAddress?)
        /// A route gained or changed: probe at once, so recovery takes one round trip. `firstKnown`: the
        /// kernel's first word on the route since the target was set, which the target's first probe
        /// (already under way) answers for.
        case routeRegained(firstKnown: Bool)
        /// Something StatusRules reads changed: publish `state(previous:)`.
        case stateChanged
        /// GET `url` (CheckURL); answer with `checkAnswered(generation:…)`.
        case startCheck(url: String, generation: UInt64)
        /// The check under way is no longer wanted.
        case cancelCheck
    }

    /// How often a resolved name is looked up again, by default.
    public static let refresh = Duration.seconds(300)
    public let refresh: Duration

    public private(set) var host: String
    public private(set) var family: AddressFamily
    public private(set) var resolution: Resolution = .pending {
        didSet {
            pathChanges &+= 1
            if case .resolved(let address) = resolution {
                text.address = address.description
            } else {
                text.address = nil
            }
        }
    }
    /// The reachability engine's verdict for the current target; nil until the kernel answered.
    public private(set) var route: ReachabilityVerdict? {
        didSet {
            pathChanges &+= 1
            text.gateway = route?.gateway?.description
        }
    }
    /// The resolved address and the route's gateway as text, written when they change (not at every publication).
    private var text = StatusRules.Text()
    /// Counts assignments to `resolution` and `route`: unchanged, the path to Host is the same.
    public private(set) var pathChanges: UInt64 = 0
    public private(set) var probe = ProbeReport()
    /// The link the route uses, as the service says it (nil: none, or not known).
    public private(set) var link: LinkView?
    /// The NAT64 prefix the routers of the route's link advertise (nil: none, or no route).
    var advertisedNat64Prefix: Nat64Prefix? {
        guard let route else { return nil }
        return LinkView.of(link, on: route.interface)?.nat64Prefix
    }
    public private(set) var portalCheck = PortalCheck()
    /// Lookups of Host failed in a row while its known address kept answering.
    public private(set) var failedLookupsWhileAnswering = 0
    private var lookupFailure = ""
    /// DNS truth's fresh lookups fail (INTERFACE.md "DNS truth"): the Reason's words; nil while they do not.
    public private(set) var freshLookupFailure: String?
    /// After this many, the resolver counts as broken (DNS health).
    public static let brokenResolverFailures = 2
    /// The NAT64 prefix IPv4 addresses are probed through (IPv4 has no route of its own); nil: natively.
    public private(set) var nat64: Nat64Prefix?
    /// Why there is no reachability engine (it could not start); nil when there is one.
    public let routeProblem: String?
    public private(set) var generation: UInt64 = 0
    private var target: IPAddress?
    private var addresses: [IPAddress] = []
    private var failedResolutions = 0
    private var resolveAt: Instant?
    private var outputs: [Output] = []
    /// CheckURL was set while Host had no address (nothing to check over): the check starts once there is one.
    private var checkHeld = false

    public init(
        host: String, family: AddressFamily, routeProblem: String? = nil,
        refresh: Duration = MonitorCore.refresh
    ) {
        self.refresh = refresh
        self.host = host
        self.family = family
        self.routeProblem = routeProblem
    }

    public mutating func takeOutputs() -> [Output] {
        guard !outputs.isEmpty else { return [] }
        defer { outputs = [] }
        return outputs
    }

    /// The same, moved into `buffer` (emptied first): each array's storage stays in use, step after step.
    public mutating func takeOutputs(into buffer: inout [Output]) {
        buffer.removeAll(keepingCapacity: true)
        swap(&buffer, &outputs)
    }

    /// The timers, each by name.
    public enum Timer: CaseIterable, Hashable, Sendable {
        /// The HTTP check's next run (`PortalCheck`'s schedule).
        case check
        /// Host looked up again: the refresh, or a retry after a failure.
        case lookup
    }

    public func deadline(_ timer: Timer) -> Instant? {
        switch timer {
        case .check: portalCheck.nextAt
        case .lookup: resolveAt
        }
    }

    public var nextWakeup: Instant? { earliestDeadline }

    private var familyWord: String {
        switch family {
        case .any: ""
        case .ipv4: "IPv4 "
        case .ipv6: "IPv6 "
        }
    }

    /// Whether a Check has something to probe: a resolved address and no known-bad route.
    public var canProbe: Bool {
        guard case .resolved = resolution else { return false }
        return route?.usable != false
    }

    /// Status, Interface, Address, Reason, RoundTripTime and PacketLoss from what is known.
    public func state(previous: MonitorState) -> MonitorState {
        var state = previous
        var core = self
        core.update(&state)
        return state
    }

    /// The same, written over the state last published (`mutating` only to run in place: see `TargetCore.update`).
    public mutating func update(_ state: inout MonitorState) {
        let dns = resolverBroken ? "host answers, but \(host) no longer resolves: \(lookupFailure)" : freshLookupFailure
        StatusRules.update(
            &state, host: host, resolution: resolution, route: effectiveRoute, probe: probe, link: link,
            beyond: beyond(resolverProblem: dns), text: text)
    }

    /// Connectivity alone, as `update` writes it, with no text built.
    public var connectivity: Connectivity {
        StatusRules.connectivity(
            resolution: resolution, route: effectiveRoute, probe: probe, link: link,
            beyond: beyond(resolverProblem: resolverBroken ? "" : freshLookupFailure))
    }

    /// The route the rules see: unusable while the target has a problem of its own.
    private var effectiveRoute: ReachabilityVerdict? {
        routeProblem.map { ReachabilityVerdict(usable: false, reason: $0) } ?? route
    }

    private var resolverBroken: Bool { failedLookupsWhileAnswering >= Self.brokenResolverFailures }

    private func beyond(resolverProblem: String?) -> BeyondTheHost {
        BeyondTheHost(checkURL: portalCheck.url, check: portalCheck.meaning, resolverProblem: resolverProblem)
    }

    // MARK: Events

    /// Starts resolving the Host (once the model is exported).
    public mutating func start(now: Instant) {
        resolve()
        outputs.append(.stateChanged)
    }

    /// Host or AddressFamily changed: everything about the old target is forgotten.
    public mutating func targetChanged(host: String, family: AddressFamily, now: Instant) {
        self.host = host
        self.family = family
        generation &+= 1
        outputs.append(.cancelResolutions)
        addresses = []
        resolution = .pending
        failedResolutions = 0
        failedLookupsWhileAnswering = 0
        // The old host's measurements are not the new one's (the counters only grow).
        var fresh = ProbeReport()
        fresh.probesSent = probe.probesSent
        fresh.probesAnswered = probe.probesAnswered
        fresh.probesSkipped = probe.probesSkipped
        probe = fresh
        retarget(nil)
        resolve()
        outputs.append(.stateChanged)
    }

    /// The resolver answered lookup `generation`. `routedFamilies`: the families with a
    /// default route now (nil when no engine knows).
    public mutating func resolved(
        generation: UInt64, _ result: Result<[IPAddress], ResolverFailure>,
        routedFamilies: IPFamilies?, now: Instant
    ) {
        guard generation == self.generation else { return }
        switch result {
        case .success(let found) where found.isEmpty:
            // The name resolves, but not in this family: no address to probe, and no resolver trouble.
            failedResolutions = 0
            failedLookupsWhileAnswering = 0
            addresses = []
            resolution = .failed("no \(familyWord)address for \(host)")
            retarget(nil)
            resolveAt = now &+ refresh
            outputs.append(.stateChanged)
        case .success(let found):
            failedResolutions = 0
            if failedLookupsWhileAnswering > 0 { outputs.append(.stateChanged) }
            failedLookupsWhileAnswering = 0
            addresses = found
            chooseAddress(routedFamilies: routedFamilies, now: now)
            resolveAt = now &+ refresh
        case .failure(let failure):
            failedResolutions += 1
            // Only while the known address answers does a failed lookup say the resolver is broken.
            if case .resolved = resolution, probe.answering == true {
                failedLookupsWhileAnswering += 1
                let prefix = "cannot resolve \(host): "
                lookupFailure =
                    failure.message.hasPrefix(prefix)
                    ? String(failure.message.dropFirst(prefix.count)) : failure.message
            }
            // Keep probing a known address through a passing resolver failure.
            if case .resolved = resolution {
            } else {
                resolution = .failed(failure.message)
                retarget(nil)
            }
            // With a known address, every 5 s: once the name resolves again, `limited` ends within
            // 5 s. Backing off (5, 10, 20, 40, 60 s) is only for a Host that has no address yet.
            let knowsAnAddress = if case .resolved = resolution { true } else { false }
            let backoff = Duration.seconds(knowsAnAddress ? 5 : min(60, 5 << min(failedResolutions - 1, 4)))
            resolveAt = now &+ backoff
            outputs.append(.stateChanged)
        }
    }

    /// The reachability engine's verdict changed (it says which families have a default route now).
    public mutating func routeChanged(_ verdict: ReachabilityVerdict, link: LinkView? = nil, now: Instant) {
        let previous = route
        route = verdict
        self.link = link
        if family == .any, addresses.count > 1 { chooseAddress(routedFamilies: verdict.routedFamilies, now: now) }
        if verdict.usable, case .resolved = resolution,
            previous?.usable != true || previous?.interface != verdict.interface
        {
            outputs.append(.routeRegained(firstKnown: previous == nil))
        }
        // Another network (or none): what the check said is about the old one. A new source
        // address on the same link (another Wi-Fi network, a new lease) is another network too.
        // The first verdict at start is no move: a check already under way was sent on that network.
        if previous?.usable != verdict.usable || previous?.interface != verdict.interface
            || previous?.source != verdict.source
        {
            triggerCheck(newNetwork: previous != nil, now: now)
        }
        outputs.append(.stateChanged)
    }

    /// The probe engine's report changed.
    public mutating func probeReportChanged(from old: ProbeReport, to new: ProbeReport, now: Instant) {
        probe = new
        // A host that stops answering may have moved: look its name up again.
        if old.answering == true && new.answering == false { resolve() }
        if (old.answering == true) != (new.answering == true) {
            triggerCheck(newNetwork: false, now: now)
        }
        outputs.append(.stateChanged)
    }

    /// IPv4 addresses are to be reached through `prefix` (nil: natively), RFC 6052.
    public mutating func nat64Changed(_ prefix: Nat64Prefix?, now: Instant) {
        guard prefix != nat64 else { return }
        nat64 = prefix
        if case .resolved(let address) = resolution { retarget(address) }
        outputs.append(.stateChanged)
    }

    /// Where probes for `address` go: its synthesized IPv6 address while IPv4 goes through NAT64.
    public func probeAddress(for address: IPAddress) -> IPAddress {
        nat64.flatMap { $0.synthesize(address) } ?? address
    }

    /// The service says something new of link `id` (nil: it is gone); taken while the route uses it.
    public mutating func linkChanged(_ id: LinkID, _ view: LinkView?) {
        guard link?.id == id, view != link else { return }
        link = view
        outputs.append(.stateChanged)
    }

    /// DNS truth's fresh lookups began failing (the Reason's words) or succeed again (nil).
    public mutating func freshLookupsChanged(_ failure: String?) {
        guard failure != freshLookupFailure else { return }
        freshLookupFailure = failure
        outputs.append(.stateChanged)
    }

    /// CheckURL changed (or was restored).
    public mutating func checkURLChanged(_ url: String, now: Instant) {
        let hasAddress = if case .resolved = resolution { true } else { false }
        checkHeld = !hasAddress
        carryOut(portalCheck.setURL(url, now: now, starting: hasAddress))
        outputs.append(.stateChanged)
    }

    /// The check `generation` answered.
    public mutating func checkAnswered(generation: UInt64, _ meaning: CheckAnswer.Meaning, now: Instant) {
        guard portalCheck.answered(generation: generation, meaning, now: now) else { return }
        outputs.append(.stateChanged)
    }

    public mutating func handleTimeout(now: Instant) {
        for timer in Timer.allCases where isDue(timer, now: now) {
            switch timer {
            case .check: carryOut(portalCheck.handleTimeout(now: now))
            case .lookup: resolve()
            }
        }
    }

    /// The check looks again, once Host has an address in this family (before, there is nothing to check over:
    /// it waits for one).
    private mutating func triggerCheck(newNetwork: Bool, now: Instant) {
        guard case .resolved = resolution else {
            checkHeld = portalCheck.isOn
            return
        }
        carryOut(portalCheck.trigger(newNetwork: newNetwork, now: now))
    }

    private mutating func carryOut(_ actions: [PortalCheck.Action]) {
        for action in actions {
            switch action {
            case .start(let url, let generation): outputs.append(.startCheck(url: url, generation: generation))
            case .cancel: outputs.append(.cancelCheck)
            }
        }
    }

    // MARK: Internals

    private mutating func resolve() {
        resolveAt = nil
        outputs.append(.resolve(host: host, family: family, generation: generation))
    }

    /// `any`: the first address, in resolver order, whose family has a default route.
    private mutating func chooseAddress(routedFamilies: IPFamilies?, now: Instant) {
        guard var chosen = addresses.first else { return }
        if family == .any, let routedFamilies {
            chosen = addresses.first { routedFamilies.contains($0.ipFamily) } ?? chosen
        }
        if case .resolved(let current) = resolution, current == chosen { return }
        resolution = .resolved(chosen)
        retarget(chosen)
        outputs.append(.stateChanged)
        if checkHeld {
            checkHeld = false
            carryOut(portalCheck.trigger(newNetwork: false, now: now))
        }
    }

    private mutating func retarget(_ resolved: IPAddress?) {
        let address = resolved.map(probeAddress)
        // The engines drop their verdicts when their target changes.
        if address != target {
            target = address
            route = nil
        }
        outputs.append(.retarget(address))
    }
}
