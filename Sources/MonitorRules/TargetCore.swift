import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// One target's whole verdict without I/O: a `PathCore` per address family, one lookup of Host
/// for all of them, and the headline (INTERFACE.md "Every path"): the best family, among equals
/// the first in resolver order. The families other than the headline's are probed rarely while
/// every family is `full`, and at once when the headline's family is suspect. Events come in with
/// `now`; actions come out in order, with at most one `.publish`, after all the others but
/// `.verdictReady` (see `outputContractBroken`). The daemon's driver and the simulation drive this
/// same core.
public struct TargetCore {
    public enum Event: Sendable {
        /// The model is exported: every path starts (one lookup of Host for all); `checkURL` is checked once set.
        case start(checkURL: String)
        /// Host or AddressFamily changed: every path starts over; a family AddressFamily leaves out stops.
        case targetChanged(host: String, family: AddressFamily)
        /// Every path's settings (the paced families' Interval stretched while all are full).
        case probeSettings(ProbeSettings)
        case checkURL(String)
        /// The resolver answered lookup `generation`, every family in resolver order.
        case resolved(generation: UInt64, Result<[IPAddress], ResolverFailure>, routedFamilies: IPFamilies?)
        /// DNS truth's fresh lookups fail (the Reason's words), or no longer (nil): every family's verdict hears it.
        case freshLookups(failure: String?)
        /// The lookup of `ipv4only.arpa` (RFC 7050) `generation` answered.
        case nat64Resolved(generation: UInt64, Result<[IPAddress], ResolverFailure>)
        /// The machine goes to sleep (logind's PrepareForSleep): nothing is sent until `.resume`.
        case suspend
        /// The machine woke (logind, or a jump of BOOTTIME): every path probes and asks its next hop at once.
        case resume
        /// The first verdict (a Connectivity other than `unknown`) waits (true) for ModemManager's and
        /// NetworkManager's first view, so that it already carries them; or no longer (false).
        case holdFirstVerdict(Bool)
        /// `nextWakeup` has come.
        case timeout
        /// Evidence for `family`'s path alone, handed to it as is: its route's verdict, its transport's answers, its
        /// check, its traffic, its next hop. The rest of a path's events are the target's to give.
        case path(IPFamily, PathEvidence)
    }

    public enum Action: Equatable, Sendable {
        /// Look `host` up off the loop; answer with `.resolved`.
        case resolve(host: String, family: AddressFamily, generation: UInt64)
        /// Lookups for an earlier Host are no longer wanted.
        case cancelResolutions
        /// Look up `ipv4only.arpa`'s IPv6 addresses off the loop (RFC 7050); answer with `.nat64Resolved`.
        case resolveNat64(generation: UInt64)
        /// What `family`'s path asks of its own world: its route watch, its transport, its check, its traffic
        /// sampler, its next hop, its report (`take` says which); answered with `.path` events.
        case path(IPFamily, PathAsk)
        /// A probe ended and no Check waits for another family's: a verdict is in, and published. Always last.
        case verdictReady
        /// What `state(previous:)` computes changed: publish it.
        case publish
    }

    /// Each family's path, stored apart: a method called on an array's element (or on what an accessor
    /// yields) runs on a copy, and a path is large and asked at every event. See `read` and `change`.
    public private(set) var ipv4: PathCore
    public private(set) var ipv6: PathCore

    /// `family`'s path, for reading its stored values.
    @inlinable public subscript(path family: IPFamily) -> PathCore {
        _read {
            switch family {
            case .v4: yield ipv4
            case .v6: yield ipv6
            }
        }
    }

    /// `body` on `family`'s path in place (always inlined: the callers are mutating methods, and a call
    /// that is not inlined would be handed a copy of the core).
    @inline(__always) private func read<R>(_ family: IPFamily, _ body: (PathCore) -> R) -> R {
        switch family {
        case .v4: body(ipv4)
        case .v6: body(ipv6)
        }
    }

    mutating func change<R>(_ family: IPFamily, _ body: (inout PathCore) -> R) -> R {
        switch family {
        case .v4: body(&ipv4)
        case .v6: body(&ipv6)
        }
    }

    public private(set) var host: String
    public private(set) var family: AddressFamily
    /// Whom the headline follows among equals: the families in the order the last lookup listed them.
    public private(set) var resolverOrder: [IPFamily] = [.v6, .v4]
    /// Families whose path probes for the round of Checks under way: the verdict is ready when none is left. A Check
    /// arriving while one is underway joins it and adds none (a family that answered meanwhile has its next probe
    /// held back a Timeout anyway), so Checks that keep coming never keep the verdict from being ready.
    private var checkWaiting: IPFamilies = []
    /// The lookup under way, for the paths' current target; the paths that asked meanwhile share its answer.
    public private(set) var generation: UInt64 = 0
    private var lookupUnderway = false
    var settings: ProbeSettings
    /// The families probed at the relaxed pace (every family `full`, not the headline's).
    private var relaxed: IPFamilies = []
    /// The families that were suspect at the end of the last step.
    private var suspectFamilies: IPFamilies = []
    /// The families with a default route, as the last event that said so said.
    var routedFamilies: IPFamilies?
    /// The NAT64 prefix of the network the route to Host uses, and how it was learned.
    public internal(set) var nat64: (prefix: Nat64Prefix, source: Nat64Source)?
    /// RFC 7050: the prefix `ipv4only.arpa` revealed, for the network (IPv6 route) it was asked on.
    var discovered: Nat64Prefix?
    var discoveryNetwork: Nat64Network?
    var discoveryAt: Instant?
    var discoveryGeneration: UInt64 = 0
    /// The `ipv4only.arpa` query under way, until its answer or its limit (max(5 s, Timeout)): IPv4 without a route
    /// is `unknown` meanwhile, never `none` before the answer, and a prefix the network had stays until it comes.
    var discoveryPendingUntil: Instant?
    /// The network (interface and source of the IPv6 route) `nat64` was learned on.
    var nat64Network: Nat64Network?
    /// What the network's routers announce outlives the route to Host by this much (a manager deleting and adding
    /// it again changes nothing, as the route core keeps its router's word: INTERFACE.md, "Which advertisements
    /// count").
    public static let routeReplacement = Duration.seconds(2)
    /// The first `ipv4only.arpa` answer came while IPv4 showed `unknown` for it (see `followNat64`).
    var firstAnswerCame = false
    /// An advertised prefix kept while its network's route is gone: until then.
    var nat64KeptUntil: Instant?
    /// The interface whose captive-portal API the route to Host last went through, and, while no route does, until
    /// when its PortalAPI is still shown.
    var portalInterface: String?
    var portalKeptUntil: Instant?
    /// The first verdict is held back (`holdFirstVerdict`), and one is owed; once let go, it is never held again.
    private var firstVerdictHeld = false
    private var firstVerdictLetGo = false
    private var firstVerdictOwed = false

    /// How often `ipv4only.arpa` is asked again on the same network (RFC 7050: hourly).
    public static let nat64Discovery = Duration.seconds(3600)

    /// While every family is `full`, the others than the headline's are probed at most this often.
    public static let relaxedIntervalMilliseconds: UInt32 = 30_000

    /// `slots`: each family's sequence slot in shared sockets (0 when not given), all with `stride`.
    public init(
        host: String, family: AddressFamily, probeSettings: ProbeSettings, seed: UInt64,
        slots: [IPFamily: UInt16] = [:],
        stride: UInt16 = 1, routeProblem: String? = nil, refresh: Duration = MonitorCore.refresh
    ) {
        self.host = host
        self.family = family
        settings = probeSettings
        func path(_ pathFamily: IPFamily, _ offset: UInt64) -> PathCore {
            // Each path its own random stream.
            PathCore(
                host: host, family: Self.addressFamily(pathFamily), probeSettings: probeSettings,
                seed: seed &+ offset &* 0x9E37_79B9, slot: slots[pathFamily] ?? 0, stride: stride,
                routeProblem: routeProblem, refresh: refresh)
        }
        ipv4 = path(.v4, 0)
        ipv6 = path(.v6, 1)
        watchedFamilies = IPFamilies.all.filter { watches($0) }
        nextWakeup = earliestDeadline
    }

    /// Where `family` goes in a per-family array (IPv4's, then IPv6's).
    public static func index(of family: IPFamily) -> Int { family == .v4 ? 0 : 1 }

    /// Whether AddressFamily lets `family` be watched.
    public func watches(_ family: IPFamily) -> Bool {
        switch self.family {
        case .any: true
        case .ipv4: family == .v4
        case .ipv6: family == .v6
        }
    }

    /// The families AddressFamily watches (kept, not computed: read on every event).
    private var watchedFamilies = IPFamilies.all

    static func addressFamily(_ family: IPFamily) -> AddressFamily { family == .v4 ? .ipv4 : .ipv6 }

    /// When to hand the core `.timeout`: the earliest deadline in its table (`TargetTimer`), as of the last event.
    public private(set) var nextWakeup: Instant?

    /// The output contract above (see `OutputContract`); what broke it, nil when kept.
    public static func outputContractBroken(_ actions: [Action]) -> String? {
        OutputContract.broken(actions) { action in
            switch action {
            case .publish: .publish
            case .verdictReady: .verdictReady
            default: .other
            }
        }
    }

    /// Whether `family`'s probe `sequence` still waits for its answer.
    public func isOutstanding(_ family: IPFamily, _ sequence: UInt16) -> Bool {
        read(family) { $0.isOutstanding(sequence) }
    }

    // MARK: The state

    /// The headline and every family's verdict from what the paths know.
    public func state(previous: MonitorState) -> MonitorState {
        var state = previous
        var core = self
        core.update(&state)
        return state
    }

    /// The same, written over the state last published. Each watched family's state is the path's
    /// over the last one (in place, and over one copy for IPv6 when both are watched: this runs at
    /// every publication); the headline family's becomes the state.
    ///
    /// It changes nothing of the core, yet is `mutating`, as `PathCore.update` and `MonitorCore.update`
    /// are: a call that is not then runs on a copy of the core or path it is called on (a struct held in
    /// another's storage is copied to be lent), and this runs at every publication. Nothing here hands
    /// `self` to a call that is not inlined, for the same reason.
    @inline(__always) public mutating func update(_ state: inout MonitorState) {
        let watchesV4 = watches(.v4)
        let watchesV6 = watches(.v6)
        let family4: FamilyState
        let family6: FamilyState
        let headline: IPFamily?
        let traffic: Traffic
        if watchesV4 && watchesV6 {
            // `state` holds IPv4's, `second` IPv6's.
            var second = state
            ipv6.update(&second)
            ipv4.update(&state)
            if awaitingNat64Prefix { Self.awaitAnswer(&state) }
            let connectivity4 = state.connectivity
            let connectivity6 = second.connectivity
            headline = Self.headline(order: resolverOrder) { $0 == .v4 ? connectivity4 : connectivity6 }
            traffic = Self.traffic(state.traffic, second.traffic)
            family4 = Self.familyState(.v4, state, watched: true, addressFamily: self.family)
            family6 = Self.familyState(.v6, second, watched: true, addressFamily: self.family)
            if headline == .v6 { swap(&state, &second) }
        } else {
            // One family: its state is the state.
            let watched: IPFamily = watchesV4 ? .v4 : .v6
            switch watched {
            case .v4:
                ipv4.update(&state)
                if awaitingNat64Prefix { Self.awaitAnswer(&state) }
            case .v6: ipv6.update(&state)
            }
            headline = watched
            traffic = Self.traffic(state.traffic, nil)
            family4 = Self.familyState(.v4, state, watched: watchesV4, addressFamily: self.family)
            family6 = Self.familyState(.v6, state, watched: watchesV6, addressFamily: self.family)
        }
        state.probesSent = ipv4.probe.report.probesSent + ipv6.probe.report.probesSent
        state.probesAnswered = ipv4.probe.report.probesAnswered + ipv6.probe.report.probesAnswered
        state.probesSkipped = ipv4.probe.report.probesSkipped + ipv6.probe.report.probesSkipped
        state.traffic = traffic
        state.ipv4 = family4
        state.ipv6 = family6
        if headline == nil { state.blame = nil }
        state.nat64Prefix = nat64.map { "\($0.prefix)" } ?? ""
        state.nat64Source = nat64?.source
        // How Host's IPv4 address is reached: `nat64` through the prefix, `native` over an IPv4 route, "" when it is not.
        state.ipv4Path =
            if watchesV4, case .resolved = ipv4.monitor.resolution, ipv4.monitor.route?.usable == true {
                ipv4.monitor.nat64 == nil ? .native : .nat64
            } else {
                nil
            }
        if state.portalAPI.isEmpty, portalKeptUntil != nil, let name = portalInterface,
            let api = LinkView.facts(of: (watches(.v6) ? ipv6 : ipv4).monitor.link, on: name)?.portalAPI
        {
            state.portalAPI = api.uri
            state.portalVenueURL = api.answer?.venueInfoURL ?? ""
        }
    }

    /// Connectivity as `update` writes it, with no state built (the first verdict's hold reads it at each step).
    public var connectivity: Connectivity {
        var v4 = read(.v4) { $0.connectivity }
        if watches(.v4), awaitingNat64Prefix, v4 == .none { v4 = .unknown }
        guard watches(.v4) else { return read(.v6) { $0.connectivity } }
        guard watches(.v6) else { return v4 }
        let v6 = read(.v6) { $0.connectivity }
        return Self.headline(order: resolverOrder) { $0 == .v4 ? v4 : v6 } == .v6 ? v6 : v4
    }

    /// IPv4 without a route while `ipv4only.arpa` is asked: no verdict before the answer.
    private static func awaitAnswer(_ state: inout MonitorState) {
        guard state.connectivity == .none else { return }
        state.connectivity = .unknown
        state.status = .unknown
        state.reason = "asking ipv4only.arpa for the network's NAT64 prefix"
    }

    @inline(__always) private static func familyState(
        _ family: IPFamily, _ state: MonitorState, watched: Bool, addressFamily: AddressFamily
    ) -> FamilyState {
        guard watched else {
            return FamilyState(connectivity: .none, reason: "AddressFamily is \(addressFamily.rawValue)")
        }
        let reason =
            if state.connectivity == .full || state.connectivity == .unknown {
                ""
            } else if let silence = state.silence {
                "host not answering over \(family): " + silence
            } else {
                state.reason
            }
        return FamilyState(
            connectivity: state.connectivity, address: state.address, reason: reason,
            roundTripTime: state.roundTripTime, gateway: state.gateway, neighbor: state.neighbor)
    }

    // MARK: Events

    public mutating func handle(_ event: Event, now: Instant) -> [Action] {
        var actions: [Action] = []
        handle(event, now: now, into: &actions)
        return actions
    }

    /// The same, the actions written into `actions` (emptied first): a driver hands the same array at
    /// every event, and its storage is reused.
    public mutating func handle(_ event: Event, now: Instant, into actions: inout [Action]) {
        var step = Step(into: &actions)
        defer { swap(&step.actions, &actions) }
        switch event {
        case .start(let checkURL):
            // Every path hears the settings, watched or not; one AddressFamily does not watch sends nothing.
            for family in IPFamily.allCases { feed(family, .start(checkURL: checkURL), now: now, &step) }
        case .targetChanged(let host, let family):
            self.host = host
            self.family = family
            watchedFamilies = IPFamilies.all.filter { watches($0) }
            generation &+= 1
            lookupUnderway = false
            checkWaiting = []
            discoveryNetwork = nil
            discoveryPendingUntil = nil
            step.publish = true
            // A family no longer watched stops too: nothing is sent in it.
            for pathFamily in IPFamily.allCases {
                feed(pathFamily, .targetChanged(host: host, family: Self.addressFamily(pathFamily)), now: now, &step)
            }
        case .probeSettings(let settings):
            self.settings = settings
            for family in IPFamily.allCases { feed(family, .probeSettings(pacedSettings(family)), now: now, &step) }
        case .checkURL(let url):
            for family in IPFamily.allCases { feed(family, .checkURL(url), now: now, &step) }
        case .resolved(let generation, let result, let routedFamilies):
            self.routedFamilies = routedFamilies ?? self.routedFamilies
            guard generation == self.generation else { break }
            lookupUnderway = false
            if case .success(let addresses) = result {
                let listed = addresses.reduce(into: [IPFamily]()) {
                    if !$0.contains($1.ipFamily) { $0.append($1.ipFamily) }
                }
                resolverOrder = listed + IPFamily.allCases.filter { !listed.contains($0) }
            }
            for family in watchedFamilies {
                let own = result.map { $0.filter { $0.ipFamily == family } }
                feed(
                    family,
                    .resolved(generation: read(family) { $0.monitor.generation }, own, routedFamilies: routedFamilies),
                    now: now, &step)
            }
        case .nat64Resolved(let generation, let result):
            guard generation == discoveryGeneration else { break }
            firstAnswerCame = awaitingNat64Prefix
            // Held to a router's bounds: never inside a network of the interface's own (issue 54 item 7).
            let onLink = ipv6.monitor.route?.onLinkIPv6 ?? []
            discovered = (try? result.get()).flatMap(Nat64Prefix.discovered).flatMap { prefix in
                onLink.contains { $0.contains(prefix) } ? nil : prefix
            }
            discoveryPendingUntil = nil
            step.publish = true
        case .freshLookups(let failure):
            for family in IPFamily.allCases { feed(family, .freshLookups(failure: failure), now: now, &step) }
        case .path(let family, let evidence):
            if case .route(let verdict, _) = evidence { routedFamilies = verdict.routedFamilies }
            feed(family, .evidence(evidence), now: now, &step)
        case .suspend:
            for family in IPFamily.allCases { feed(family, .suspend, now: now, &step) }
            step.publish = true
        case .resume:
            for family in watchedFamilies { feed(family, .resume, now: now, &step) }
            step.publish = true
        case .holdFirstVerdict(let hold):
            guard !firstVerdictLetGo else { break }
            firstVerdictHeld = hold
            firstVerdictLetGo = !hold
            if !hold, firstVerdictOwed {
                firstVerdictOwed = false
                step.publish = true
            }
        case .timeout:
            for timer in TargetTimer.allCases where isDue(timer, now: now) {
                if let family = timer.family { feed(family, .timeout, now: now, &step) }
            }
        }
        finish(&step, now: now)
    }

    /// A Check wants a fresh verdict: every watched family with something to probe probes (see
    /// `PathCore.check`); the verdict is ready once each has its own. False when none can probe.
    public mutating func check(now: Instant) -> (probing: Bool, actions: [Action]) {
        var actions: [Action] = []
        let probing = check(now: now, into: &actions)
        return (probing, actions)
    }

    /// The same, the actions written into `actions` (emptied first).
    public mutating func check(now: Instant, into actions: inout [Action]) -> Bool {
        var step = Step(into: &actions)
        defer { swap(&step.actions, &actions) }
        var pathActions = takePathActions()
        // The families a round of Checks waits for are those probing when its first Check came: a family that
        // starts probing later (its route back) would hold the round's earlier Checks past their two Timeouts.
        let roundUnderway = !checkWaiting.isEmpty
        for family in watchedFamilies {
            let probing = change(family) { $0.check(now: now, into: &pathActions) }
            if probing && !roundUnderway { checkWaiting.insert(family) }
            take(family, pathActions, now: now, &step)
        }
        swap(&pathActions, &self.pathActions)
        finish(&step, now: now)
        return !checkWaiting.isEmpty
    }

    // MARK: Internals

    /// What one event set off in the paths, gathered before it is handed on.
    struct Step {
        var actions: [Action] = []
        var publish = false
        var verdict = false

        /// A step writing into `actions`' storage (emptied), which it holds until it is swapped back.
        init(into actions: inout [Action]) {
            actions.removeAll(keepingCapacity: true)
            swap(&self.actions, &actions)
        }
    }

    /// A path's actions during one event, in storage kept from event to event (taken while in use).
    private var pathActions: [PathCore.Action] = []

    private mutating func takePathActions() -> [PathCore.Action] {
        var taken: [PathCore.Action] = []
        swap(&taken, &pathActions)
        return taken
    }

    mutating func feed(_ family: IPFamily, _ event: PathCore.Event, now: Instant, _ step: inout Step) {
        var actions = takePathActions()
        change(family) { $0.handle(event, now: now, into: &actions) }
        take(family, actions, now: now, &step)
        swap(&actions, &pathActions)
    }

    /// A path's actions, tagged with its family; lookups become the target's one lookup, and a family
    /// AddressFamily does not watch only lets go of what it held.
    private mutating func take(_ family: IPFamily, _ actions: [PathCore.Action], now: Instant, _ step: inout Step) {
        let watched = watches(family)
        for action in actions {
            switch action {
            case .resolve:
                guard watched, !lookupUnderway else { continue }
                lookupUnderway = true
                step.actions.append(.resolve(host: host, family: self.family, generation: generation))
            case .cancelResolutions:
                if !step.actions.contains(.cancelResolutions) { step.actions.append(.cancelResolutions) }
            case .ask(let ask):
                switch ask {
                case .watchRoute(let address):
                    step.actions.append(.path(family, .watchRoute(watched ? address : nil)))
                case .probe(let address):
                    step.actions.append(.path(family, .probe(watched ? address : nil)))
                case .cancelCheck, .reportChanged:
                    step.actions.append(.path(family, ask))
                case .send, .startCheck, .sampleTraffic, .checkNeighbor, .probeBeyond:
                    // A family AddressFamily does not watch sends nothing and asks nobody.
                    if watched { step.actions.append(.path(family, ask)) }
                }
            case .publish:
                step.publish = true
            case .verdictReady:
                checkWaiting.remove(family)
                step.verdict = true
            }
        }
    }

    /// The pace across families, then the publish and the verdict, last.
    private mutating func finish(_ step: inout Step, now: Instant) {
        followNat64(now: now, &step)
        followPortal(now: now, &step)
        pace(now: now, &step)
        // A family that has nothing left to probe gives no verdict of its own: the Check waits for the others only.
        for family in checkWaiting {
            if watches(family) && read(family, { $0.probe.awaitingVerdict }) { continue }
            checkWaiting.remove(family)
            step.verdict = true
        }
        if step.publish, firstVerdictHeld {
            // Only while held (the first second at most): what is published until the first verdict is, is not.
            if connectivity != .unknown {
                firstVerdictOwed = true
                step.publish = false
            }
        }
        // Appended where they are: a copy of the array appended to would be copied whole.
        if step.publish { step.actions.append(.publish) }
        if step.verdict && checkWaiting.isEmpty { step.actions.append(.verdictReady) }
        nextWakeup = earliestDeadline
    }

    /// INTERFACE.md "Cheap when both work": while every watched family is `full`, the others than the
    /// headline's are probed at the relaxed pace; when a family turns suspect (the headline's, or another whose
    /// relaxed probe was the first lost), every other one is probed at once.
    private mutating func pace(now: Instant, _ step: inout Step) {
        let families = watchedFamilies
        guard families.count > 1 else { return }
        // Each watched family's Connectivity (no dictionary: this runs at every step).
        var v4: Connectivity?
        var v6: Connectivity?
        for family in families {
            let connectivity = read(family) { $0.connectivity }
            if family == .v4 { v4 = connectivity } else { v6 = connectivity }
        }
        let connectivity = { (family: IPFamily) in family == .v4 ? v4 : v6 }
        let headline = Self.headline(order: resolverOrder, connectivity)
        let allFull = families.allSatisfy { connectivity($0) == .full }
        let wanted: IPFamilies = allFull ? families.filter { $0 != headline } : []
        if wanted != relaxed {
            relaxed = wanted
            for family in families where read(family, { $0.probe.settings }) != pacedSettings(family) {
                feed(family, .probeSettings(pacedSettings(family)), now: now, &step)
            }
        }
        // A suspicion in any family probes the others at once, their silence continuing its failures: so an upstream
        // dead for every family is confirmed as soon as for one, whichever family's probe was lost first.
        for family in families {
            let suspect = read(family) { $0.probe.suspicious }
            guard suspect != suspectFamilies.contains(family) else { continue }
            if suspect {
                suspectFamilies.insert(family)
                let failures = read(family) { $0.probe.verdict.consecutiveFailures }
                for other in families where other != family {
                    feed(other, .probeNow(continuing: failures), now: now, &step)
                }
            } else {
                suspectFamilies.remove(family)
                guard read(family, { $0.probe.verdict.answering == true }) else { continue }
                for other in families where other != family { feed(other, .suspicionEnded, now: now, &step) }
            }
        }
    }

    private func pacedSettings(_ family: IPFamily) -> ProbeSettings {
        guard relaxed.contains(family) else { return settings }
        var paced = settings
        if settings.probing == .adaptive {
            // Calm, the other families are probed once per max(5 × the calm period, 30 s); unsure, at the Interval
            // as the headline's (INTERFACE.md "Quiet by default").
            let calm = max(settings.idleIntervalMilliseconds, settings.intervalMilliseconds)
            paced.idleIntervalMilliseconds = UInt32(clamping: max(UInt64(calm) * 5, 30_000))
        } else {
            paced.intervalMilliseconds = max(settings.intervalMilliseconds, Self.relaxedIntervalMilliseconds)
        }
        return paced
    }
}

/// How the NAT64 prefix was learned (INTERFACE.md `Nat64Source`).
public enum Nat64Source: String, Sendable {
    /// A router advertised it (RFC 8781).
    case ra
    /// The AAAA answer for `ipv4only.arpa` revealed it (RFC 7050).
    case dns
}
