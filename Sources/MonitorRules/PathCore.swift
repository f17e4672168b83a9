import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// One address family's path of a target, without I/O: `MonitorCore` (the name's address in this
/// family, the route, the check of CheckURL, DNS health, link facts) and `ProbeCore` (the schedule,
/// the tracker, the verdict) composed once, here. Events come in with `now`; what to do comes out as
/// actions, in order, with at most one `.publish`, after all the others but `.verdictReady` (which
/// follows it, so pending Checks answer with the state just published). `TargetCore` holds one per
/// family and decides the headline from them.
public struct PathCore {
    public enum Event: Sendable {
        /// The model is exported: start resolving Host; check `checkURL` when it is set.
        case start(checkURL: String)
        case targetChanged(host: String, family: AddressFamily)
        case probeSettings(ProbeSettings)
        case checkURL(String)
        /// The resolver answered lookup `generation`; `routedFamilies`: the families with a default route now.
        case resolved(generation: UInt64, Result<[IPAddress], ResolverFailure>, routedFamilies: IPFamilies?)
        /// What the path's own world says (see `PathEvidence`).
        case evidence(PathEvidence)
        /// DNS truth's fresh lookups fail (the Reason's words), or no longer (nil).
        case freshLookups(failure: String?)
        /// `nextWakeup` has come.
        case timeout
        /// Another family of the target is suspect after `failures` in a row: probe now, unless a probe is in
        /// flight, and let this family's silence continue those failures.
        case probeNow(continuing: UInt32)
        /// The suspect family answered again: its failures are no longer this family's.
        case suspicionEnded
        /// Reach IPv4 addresses through this NAT64 prefix (nil: natively).
        case nat64(Nat64Prefix?)
        /// The machine goes to sleep: nothing is sent until `.resume`.
        case suspend
        /// The machine woke: probe and ask the next hop at once.
        case resume
    }

    public enum Action: Equatable, Sendable {
        /// Look `host` up off the loop; answer with `.resolved`.
        case resolve(host: String, family: AddressFamily, generation: UInt64)
        /// Lookups for an earlier Host are no longer wanted.
        case cancelResolutions
        /// What the path asks of its own world (see `PathAsk`).
        case ask(PathAsk)
        /// A probe ended: a verdict is in, and published; pending Checks may answer. Always last.
        case verdictReady
        /// What `state(previous:)` computes changed: publish it.
        case publish
    }

    public private(set) var monitor: MonitorCore
    public private(set) var probe: ProbeCore
    public private(set) var trafficWatch = TrafficWatch()
    /// The path's state when a new NAT64 prefix moved its probes while it had a verdict: published in its place until
    /// the new address has a verdict of its own.
    private var heldState: MonitorState?
    /// Where the path breaks, when it does (the neighbour check, the probe past the gateway).
    public private(set) var diagnosis = PathDiagnosis()
    /// Where the transport sends, as last asked by `.probe`; whether its `.probing` is still to come.
    private var probeAddress: IPAddress?
    /// Where the route watch points (what `.watchRoute` last said), its bytes.
    private var watchedRoute: AddressBytes?
    private var awaitingProbing = false

    public init(
        host: String, family: AddressFamily, probeSettings: ProbeSettings, seed: UInt64, slot: UInt16 = 0,
        stride: UInt16 = 1, routeProblem: String? = nil, refresh: Duration = MonitorCore.refresh
    ) {
        monitor = MonitorCore(host: host, family: family, routeProblem: routeProblem, refresh: refresh)
        probe = ProbeCore(settings: probeSettings, seed: seed, slot: slot, stride: stride)
        nextWakeup = earliestDeadline
    }

    /// When to hand the core `.timeout`: the earliest deadline in its table (`PathTimer`), as of the last event
    /// (kept, not computed, so a driver asking after every event copies nothing).
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

    /// Lets go of the verdict held over a NAT64 retargeting: the target showed none of it (IPv4 was `unknown` while
    /// `ipv4only.arpa` was asked), so the next shown is the new address's own.
    public mutating func dropHeldVerdict() {
        heldState = nil
    }

    /// The path's Connectivity, found without writing any text (the pace across families reads it at every step).
    public var connectivity: Connectivity { heldState?.connectivity ?? monitor.connectivity }

    /// Status, Interface, Address, Reason, RoundTripTime, PacketLoss and the rest from what is known.
    public func state(previous: MonitorState) -> MonitorState {
        var state = previous
        var core = self
        core.update(&state)
        return state
    }

    /// The same, written over the state last published (`mutating` only to run in place: see `TargetCore.update`).
    @inline(__always) public mutating func update(_ state: inout MonitorState) {
        if let heldState {
            // The path's last verdict, until the new NAT64 address has its own (LastChange is the model's).
            let lastChange = state.lastChange
            state = heldState
            state.lastChange = lastChange
            return
        }
        monitor.update(&state)
        state.traffic = trafficWatch.traffic
        let hop = diagnosis.nextHop
        state.neighbor =
            hop?.hasNeighbors == true && monitor.route?.usable == true ? diagnosis.neighbor ?? .unknown : nil
        var facts = BlameFacts(connectivity: state.connectivity)
        if case .failed = monitor.resolution { facts.lookupFailed = true }
        facts.routeUsable = monitor.route?.usable == true
        facts.hostAnswering = probe.verdict.answering == true
        facts.resolverBroken =
            monitor.failedLookupsWhileAnswering >= MonitorCore.brokenResolverFailures
            || monitor.freshLookupFailure != nil
        facts.hasGateway = hop != nil
        facts.neighborChecked = diagnosis.neighborApplies
        facts.neighbor = diagnosis.neighbor
        facts.beyond = diagnosis.beyond
        let blame = BlameRules.blame(facts)
        state.blame = blame
        if let hop, let reason = BlameRules.reason(blame, gateway: hop.gateway, interface: hop.interface) {
            state.reason = reason
        }
    }

    /// Whether probe `sequence` still waits for its answer (the transport keeps its TCP connection so long).
    public func isOutstanding(_ sequence: UInt16) -> Bool { probe.isOutstanding(sequence) }

    public mutating func handle(_ event: Event, now: Instant) -> [Action] {
        var actions: [Action] = []
        handle(event, now: now, into: &actions)
        return actions
    }

    /// The same, the actions written into `actions` (emptied first; its storage is reused step after step).
    public mutating func handle(_ event: Event, now: Instant, into actions: inout [Action]) {
        switch event {
        case .start(let checkURL):
            monitor.start(now: now)
            if !checkURL.isEmpty { monitor.checkURLChanged(checkURL, now: now) }
        case .targetChanged(let host, let family):
            heldState = nil
            monitor.targetChanged(host: host, family: family, now: now)
        case .probeSettings(let settings):
            probe.updateSettings(settings, now: now)
        case .checkURL(let url):
            monitor.checkURLChanged(url, now: now)
        case .resolved(let generation, let result, let routedFamilies):
            monitor.resolved(generation: generation, result, routedFamilies: routedFamilies, now: now)
        case .evidence(let evidence):
            take(evidence, now: now)
        case .freshLookups(let failure):
            monitor.freshLookupsChanged(failure)
            // Fresh lookups of Host's name failing is a suspicion (INTERFACE.md "Quiet by default").
            if failure != nil { probe.suspect(now: now) }
        case .nat64(let prefix):
            // A prefix announced, changed or withdrawn moves the probes to another address: the verdict the path
            // had stands until that address has its own, never `unknown` in between (a target that had a verdict
            // goes from one to the next).
            if heldState == nil, prefix != monitor.nat64, monitor.connectivity != .unknown {
                var snapshot = MonitorState()
                update(&snapshot)
                heldState = snapshot
            }
            monitor.nat64Changed(prefix, now: now)
        case .probeNow(let failures):
            if monitor.canProbe { probe.probeNow(continuing: failures, now: now) }
        case .suspicionEnded:
            probe.withdrawCredit()
        case .suspend:
            probe.suspend()
            diagnosis.suspended()
        case .resume:
            probe.resume(now: now)
            diagnosisActions += diagnosis.resumed(now: now)
        case .timeout:
            for timer in PathTimer.allCases where isDue(timer, now: now) {
                switch timer {
                case .lookupAndCheck: monitor.handleTimeout(now: now)
                case .traffic: if trafficWatch.expire(now: now) { trafficChanged(now: now) }
                case .probe: probe.handleTimeout(now: now)
                case .diagnosis: diagnosisActions += diagnosis.handleTimeout(now: now)
                }
            }
        }
        settle(now: now, into: &actions)
    }

    private mutating func take(_ evidence: PathEvidence, now: Instant) {
        switch evidence {
        case .route(let verdict, let link):
            // One about an address this path watched before (on its way when the path moved on) is not its route.
            if verdict.destination == nil || verdict.destination == watchedRoute {
                monitor.routeChanged(verdict, link: link, now: now)
            }
        case .link(let id, let view):
            monitor.linkChanged(id, view)
        case .probing(let method):
            awaitingProbing = false
            probe.start(target: probeAddress.map(ProbeTarget.init), method: method, now: now)
        case .probe(let input):
            probe.handle(input, now: now)
        case .checkAnswered(let generation, let meaning):
            monitor.checkAnswered(generation: generation, meaning, now: now)
        case .trafficSampled(let generation, let sample, let cost):
            let probeWakeup = scheduledProbe(notBefore: now &+ TrafficWatch.busyPeriod)
            let changed =
                if let sample {
                    trafficWatch.sampled(generation: generation, sample, cost: cost, nextProbe: probeWakeup, now: now)
                } else {
                    trafficWatch.sampleFailed(generation: generation, nextProbe: probeWakeup, now: now)
                }
            if changed { trafficChanged(now: now) }
        case .neighborAnswered(let generation, let answer):
            diagnosisActions += diagnosis.neighborAnswered(generation: generation, answer, now: now)
            if answer == .unreachable { probe.suspect(now: now) }
        case .beyondAnswered(let generation, let answer):
            diagnosis.beyondAnswered(generation: generation, answer)
        }
    }

    /// A Check wants a fresh verdict: false when there is nothing to probe (no address, a
    /// known-bad route); else `.verdictReady` follows within two Timeouts (see `ProbeCore.check`).
    public mutating func check(now: Instant) -> (probing: Bool, actions: [Action]) {
        var actions: [Action] = []
        let probing = check(now: now, into: &actions)
        return (probing, actions)
    }

    /// The same, the actions written into `actions` (emptied first).
    public mutating func check(now: Instant, into actions: inout [Action]) -> Bool {
        // Not `&&`: its right side is a closure, and one that changes `probe` makes a copy of it.
        var probing = false
        if monitor.canProbe { probing = probe.check(now: now) }
        settle(now: now, into: &actions)
        return probing
    }

    /// Traffic is watched while Host has an address and a usable route.
    private var watchedPath: (host: IPAddress, interface: String, route: HostRoute?)? {
        guard case .resolved(let host) = monitor.resolution, let route = monitor.route, route.usable,
            !route.interface.isEmpty
        else { return nil }
        return (host, route.interface, route.hostRoute)
    }

    /// The path `trafficWatch` watches, as of `monitor.pathChanges` = `pathChangesSeen`.
    private var trafficPath: (host: IPAddress, interface: String, route: HostRoute?)?
    private var pathChangesSeen: UInt64 = .max
    /// `monitor.pathChanges` when the diagnosis was last told the next hop.
    private var diagnosisPathChangesSeen: UInt64 = .max

    private var trafficPublishDue = false
    /// What the diagnosis asked during the event, carried out in `settle`.
    private var diagnosisActions: [PathDiagnosis.Action] = []

    /// The word changed: the probes hear of it, and it is published (Traffic is quiet on its own).
    /// The first tick of the probe schedule at or after `earliest`: where no connection is watched, a sample rides on
    /// a wake-up the schedule has anyway, however short the Interval (at 500 ms the next tick is always sooner than a
    /// busy sample would be, which left new connections unseen for 5 s).
    private func scheduledProbe(notBefore earliest: Instant) -> Instant? {
        guard let next = probe.nextScheduledProbe else { return nil }
        guard next < earliest else { return next }
        let interval = probe.settings.interval
        guard interval > .zero else { return nil }
        let aligned = next &+ interval * ((earliest - next) / interval)
        return aligned < earliest ? aligned &+ interval : aligned
    }

    private mutating func trafficChanged(now: Instant) {
        probe.trafficChanged(trafficWatch.traffic, now: now)
        trafficPublishDue = true
    }

    /// Feeds each core's outputs to the other until both are quiet; the state is published once,
    /// and only then is a verdict ready.
    private mutating func settle(now: Instant, into actions: inout [Action]) {
        actions.removeAll(keepingCapacity: true)
        // Held until the new address has a verdict of its own, or says anything against the held one: silence, or a
        // check answered otherwise than expected (a held `full` never stands against a middlebox's answer).
        if heldState != nil,
            monitor.connectivity != .unknown || probe.report.answering == false
                || (monitor.portalCheck.meaning.map { $0 != .expected } ?? false)
        {
            heldState = nil
            trafficPublishDue = true
        }
        var verdictReady = false
        // Only the event itself moves Host's address or its route (what the cores say to each other below does not).
        if monitor.pathChanges != pathChangesSeen {
            pathChangesSeen = monitor.pathChanges
            // A change of the route to Host (gained, lost, another interface or next hop) is a suspicion.
            probe.suspect(now: now)
            let path = watchedPath
            if path?.host != trafficPath?.host || path?.interface != trafficPath?.interface {
                trafficPath = path
                if trafficWatch.pathChanged(watching: path != nil, now: now) { trafficChanged(now: now) }
            } else if path?.route != trafficPath?.route {
                // Another next hop on the same interface: the samples count what is routed like it from now on.
                trafficPath = path
            }
        }
        // The word changes only in the event or just above, never below.
        var publishDue = trafficPublishDue
        trafficPublishDue = false
        while true {
            if let (generation, inline) = trafficWatch.takeDueSample(now: now), let path = trafficPath {
                actions.append(
                    .ask(
                        .sampleTraffic(
                            generation: generation, host: path.host, route: path.route, interface: path.interface,
                            inline: inline)))
            }
            // Unsure while not `full`; the calm period four times as long on a metered link (`steady` has no calm: the
            // Connectivity is not computed for it here, as this runs at every step).
            if probe.settings.probing == .adaptive {
                probe.pathSays(connectivityFull: connectivity == .full, metered: metered, now: now)
            }
            monitor.takeOutputs(into: &monitorOutputs)
            probe.takeOutputs(into: &probeOutputs)
            if monitorOutputs.isEmpty && probeOutputs.isEmpty { break }
            for output in monitorOutputs {
                switch output {
                case .resolve(let host, let family, let generation):
                    actions.append(.resolve(host: host, family: family, generation: generation))
                case .cancelResolutions:
                    actions.append(.cancelResolutions)
                case .retarget(let address):
                    watchedRoute = address?.bytes
                    actions.append(.ask(.watchRoute(address)))
                    if address != probeAddress {
                        probeAddress = address
                        awaitingProbing = true
                        actions.append(.ask(.probe(address)))
                    }
                case .routeRegained(let firstKnown):
                    // A new address probes at once when its transport is ready.
                    if !awaitingProbing { probe.routeRegained(now: now, firstKnown: firstKnown) }
                case .stateChanged:
                    publishDue = true
                case .startCheck(let url, let generation):
                    let limit = PortalCheck.limitMilliseconds(timeout: probe.settings.timeoutMilliseconds)
                    actions.append(.ask(.startCheck(url: url, generation: generation, limitMilliseconds: limit)))
                case .cancelCheck:
                    actions.append(.ask(.cancelCheck))
                }
            }
            for output in probeOutputs {
                switch output {
                case .send(let sequence, let token, let forCheck, let extra, let alsoTCP):
                    actions.append(
                        .ask(
                            .send(sequence: sequence, token: token, forCheck: forCheck, extra: extra, alsoTCP: alsoTCP))
                    )
                case .probeFinished:
                    verdictReady = true
                case .report(let old, let new):
                    actions.append(.ask(.reportChanged(old: old, new: new)))
                    monitor.probeReportChanged(from: old, to: new, now: now)
                }
            }
        }
        if followDiagnosis(now: now, &actions) { publishDue = true }
        if publishDue { actions.append(.publish) }
        if verdictReady { actions.append(.verdictReady) }
        nextWakeup = earliestDeadline
    }

    /// The route's link is metered: NetworkManager says so, it is a modem's, or the route is cellular.
    private var metered: Bool {
        guard let route = monitor.route else { return false }
        if route.kind == .cellular { return true }
        guard let facts = LinkView.facts(of: monitor.link, on: route.interface) else { return false }
        return facts.meteredByNetworkManager || facts.isModem
    }

    /// What the monitor and probe cores said during `settle`, in storage kept from step to step.
    private var monitorOutputs: [MonitorCore.Output] = []
    private var probeOutputs: [ProbeCore.Output] = []

    /// Hands the diagnosis the route's next hop and whether Host answers, and its asks to the driver;
    /// true when what it knows changed (Neighbor, Blame).
    private mutating func followDiagnosis(now: Instant, _ actions: inout [Action]) -> Bool {
        var asked = diagnosisActions
        diagnosisActions = []
        // The next hop follows from the route and the resolution alone.
        if monitor.pathChanges != diagnosisPathChangesSeen {
            diagnosisPathChangesSeen = monitor.pathChanges
            asked += diagnosis.routeChanged(nextHop, now: now)
        }
        let silent = probe.verdict.answering == false || probe.suspicious
        asked += diagnosis.hostChanged(silent: silent, address: probeAddress, now: now)
        for ask in asked {
            switch ask {
            case .checkNeighbor(let gateway, let index, let source, let generation, let routine):
                actions.append(
                    .ask(
                        .checkNeighbor(
                            gateway: gateway, interfaceIndex: index, source: source, generation: generation,
                            routine: routine)))
            case .probeBeyond(let host, let gateway, let hops, let generation):
                actions.append(.ask(.probeBeyond(host: host, gateway: gateway, hops: hops, generation: generation)))
            }
        }
        defer { diagnosisChangesShown = diagnosis.changes }
        return diagnosis.changes != diagnosisChangesShown
    }

    /// The route's next hop towards the resolved Host; nil when on-link, unusable or unresolved.
    private var nextHop: PathDiagnosis.NextHop? {
        guard let route = monitor.route, route.usable, let gateway = route.gateway, case .resolved = monitor.resolution
        else { return nil }
        return PathDiagnosis.NextHop(
            gateway: gateway, interface: route.interface, interfaceIndex: route.interfaceIndex,
            source: route.source, hasNeighbors: route.hasNeighbors)
    }

    /// The diagnosis's count of changes at the last publication (its answers arrive as events of their own).
    private var diagnosisChangesShown: UInt64 = 0
}
