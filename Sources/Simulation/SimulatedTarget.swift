import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import Timekeeping

/// One target of the simulation, as the daemon holds any target: the daemon's `TargetDriver`
/// around its `TargetCore`, acting on the shared simulated world (the kernel, the far hosts, the
/// resolver's thread, the check server, this machine's traffic, the next hop). Every target gets
/// the whole world: the ladder, the check, traffic, the diagnosis, its history. Beside the driver
/// it keeps what the invariants need, counted from the world's side, never asked of the core.
final class SimulatedTarget: TargetWorld {
    /// The simulation owns its targets and every call into one comes from its run: the reference is
    /// not counted (an unowned one costs an atomic operation per read, and it is read at every step).
    unowned(unsafe) let simulation: Simulation
    /// The target's number (0, the default, is one of them; nothing here depends on it).
    let index: Int
    /// Its watch on the shared reachability core.
    let routeID: ReachabilityCore.TargetID
    /// Its lookups go before the others' on the resolver's thread (as `Target.lookupsFirst`).
    let lookupsFirst: Bool
    let initialCore: TargetCore
    lazy var driver = TargetDriver(core: initialCore, world: self)
    /// When the driver asked to be woken.
    private(set) var wake: Instant?

    /// The probe settings in force (the simulation changes them, so it knows them without asking), and since when.
    var settings: ProbeSettings
    var lastSettingsChange = Instant.origin
    /// The state as last published, and every Status with when.
    var state = MonitorState()
    var statuses: [(at: Instant, status: Status, reason: String)] = []

    // The probes, as the far host saw them.
    struct SentProbe {
        let sentAt: Instant
        let deadline: Instant
        /// Sent beside a probe in flight: its silence or unproven error is no failure of its own.
        let extra: Bool
        var finished = false
        var answered = false
        /// An error that quoted too little to be verified named it: how it failed if no reply comes by its deadline.
        var unproven: String?
    }
    var probeTarget: IPAddress?
    var sent: [UInt16: SentProbe] = [:]
    var lastAnswerAt = Instant.origin
    var failureKindsSinceAnswer: Set<String> = []
    var answersInRow = 0
    /// When the newest probe that got its answer was sent.
    var newestAnsweredSentAt = Instant.origin
    /// When the probe whose failure was the first since the last answer was sent.
    var firstFailureSentAt: Instant?
    /// No probe since the last answer was sent off the schedule (for a Check, a route regained).
    var onScheduleSinceAnswer = true
    var lastForcedAt: Instant?
    var lastRetarget = Instant.origin
    /// Pending Checks: when each arrived, and by when its verdict must be in.
    var pendingChecks: [(arrival: Instant, limit: Instant)] = []
    /// Since when the far host filters ICMP (and answers TCP); whether this target's path failed meanwhile.
    var filteredSince: Instant?
    var pathTroubleSinceFiltered = false

    // The check of CheckURL.
    /// The check under way, and its limit, max(5 s, Timeout) when it started.
    var runningCheck: (generation: UInt64, startedAt: Instant, limit: Duration)?
    /// The check under way was answered by a middlebox with the echo asked, or had HTTPS dropped with the
    /// secure check on, from its start to its end; and whether the answer the core holds came from such a check.
    var runningCheckFaked = false
    var heldCheckFaked = false

    // Traffic.
    /// Since when the path to Host has failed (the connections routed like it then stall).
    var pathDownSince: Instant?
    /// The newest sample the core took: when, and whether data from a remote routed like Host was in it.
    var lastSample: (at: Instant, receiving: Bool)?
    /// A sample the core took during this step: it counts for skips from the next step on.
    var newSample: (at: Instant, receiving: Bool)?
    /// The word the core last had; a stall (or traffic stopping) still waiting for its probe.
    var lastTraffic: Traffic = .none
    var stallWaitingSince: Instant?
    var resumeWaitingSince: Instant?
    var skippedSinceSend = false
    var skippedSoFar = 0

    // Lookups.
    /// When the lookup of Host's name still waiting for its answer started on the resolver's thread; when one last failed.
    var lookupAskedAt: Instant?
    var lastLookupFailureAt = Instant.origin

    // The diagnosis and the history (see `SimulatedGateway.swift`).
    var diagnosis = DiagnosisWatch()
    var history = OutageHistory(began: WallTime(sinceEpoch: .zero), minimumOutage: .zero)

    /// What the driver reported during this step, checked once the step's own bookkeeping is done
    /// (the probe that ended is counted first, as the rules count it); a publication to check.
    var reported: [Reported] = []
    enum Reported {
        case reportChanged(old: ProbeReport, new: ProbeReport)
        case verdictReady
    }
    var stateDue = false
    /// Host's addresses in the simulated world, for the Host they were found for (a Host changes rarely).
    var hostAddresses: (host: String, addresses: [IPAddress]) = ("", [])

    init(
        simulation: Simulation, index: Int, core: TargetCore, settings: ProbeSettings,
        routeID: ReachabilityCore.TargetID,
        lookupsFirst: Bool
    ) {
        self.simulation = simulation
        self.index = index
        self.routeID = routeID
        self.lookupsFirst = lookupsFirst
        watchedFamily = simulation.watchedFamily
        self.settings = settings
        initialCore = core
        wake = core.nextWakeup
    }

    /// The family the scenario watches (the other is not watched: nothing may be sent in it), and its path.
    let watchedFamily: IPFamily
    private lazy var watchedPath = driver.path(watchedFamily)
    var path: PathCore {
        unsafeAddress { watchedPath }
    }

    /// Hands `event` to the driver, which carries out its actions at once.
    func take(_ event: TargetCore.Event) {
        driver.handle(event)
    }

    func violation(_ rule: String) {
        simulation.violation(index == 0 ? rule : "target \(index): \(rule)")
    }

    func log(_ text: @autoclosure () -> String) {
        simulation.log(index == 0 ? text() : "[\(index)] \(text())")
    }

    // MARK: TargetWorld

    var now: Instant { simulation.now }
    /// The simulated kernel's links are known by index only.
    func interfaceIndex(named name: String) -> UInt32? { nil }
    var routedFamilies: IPFamilies? { simulation.routedFamilies }

    func resolve(_ host: String, family: AddressFamily, generation: UInt64) {
        simulation.resolve(host, generation, for: index)
    }

    /// The simulated networks have IPv4 routes: the core never needs to discover a NAT64 prefix.
    func resolveNat64(generation: UInt64) {
        violation("looked for a NAT64 prefix on a network with IPv4 routes")
    }

    func cancelResolutions() {
        // Answers to earlier generations under way still arrive: the core must ignore them.
        simulation.resolver.cancel(target: index, first: lookupsFirst)
    }

    /// A family the scenario does not watch gets nothing but being let go of.
    private func watched(_ family: IPFamily, _ what: String) -> Bool {
        if family == watchedFamily { return true }
        violation("asked to \(what) in \(family), which AddressFamily does not watch")
        return false
    }

    func watchRoute(_ family: IPFamily, _ address: IPAddress?) {
        guard family == watchedFamily else {
            if address != nil { violation("watched a route in \(family), which AddressFamily does not watch") }
            return
        }
        simulation.routeNewsSinceCheck = true
        let changed =
            address != simulation.askReach({ $0.target(routeID) })
            || [family] != simulation.askReach({ $0.families(routeID) })
        simulation.reach.setTarget(address, for: routeID)
        simulation.reach.setFamilies([family], for: routeID)
        if changed { simulation.noteKernelTruth(resetting: routeID) }
    }

    func aimProbes(_ family: IPFamily, at address: IPAddress?) -> ProbeMethod? {
        guard family == watchedFamily else {
            if address != nil { violation("aimed probes in \(family), which AddressFamily does not watch") }
            return nil
        }
        probeTarget = address
        lastRetarget = now
        pendingChecks = []
        sent = [:]
        failureKindsSinceAnswer = []
        firstFailureSentAt = nil
        onScheduleSinceAnswer = true
        answersInRow = 0
        lastAnswerAt = now
        newestAnsweredSentAt = .origin
        return simulation.scenario.probeMethod
    }

    func send(_ family: IPFamily, sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        guard watched(family, "send") else { return }
        log(
            "send \(sequence)\(forCheck ? " for a Check" : "") (outstanding \(path.probe.outstandingCount), next wake \(path.probe.nextWakeup.map { "\($0.sinceOrigin)" } ?? "none"))"
        )
        simulation.summary.probesSent += 1
        stallWaitingSince = nil
        resumeWaitingSince = nil
        skippedSinceSend = false
        sent[sequence] = SentProbe(
            sentAt: now, deadline: now + .milliseconds(settings.timeoutMilliseconds), extra: extra)
        if sent.count > 4096 { sent = sent.filter { $0.value.deadline + .seconds(10) > now } }
        if forCheck {
            onScheduleSinceAnswer = false
            simulation.summary.forcedProbes += 1
            noteForcedProbe()
        }
        transmit(sequence, token, alsoTCP: alsoTCP)
    }

    func startCheck(_ family: IPFamily, url: String, generation: UInt64, limitMilliseconds: UInt32) {
        guard watched(family, "check") else { return }
        startCheck(generation, limit: .milliseconds(limitMilliseconds))
    }

    func cancelCheck(_ family: IPFamily) {
        if family == watchedFamily { runningCheck = nil }
    }

    func sampleTraffic(
        _ family: IPFamily, generation: UInt64, host: IPAddress, interface: String, inline: Bool
    ) -> TrafficSampling {
        guard watched(family, "sample traffic") else { return .now(nil, cost: .zero) }
        return sampleTraffic(generation: generation, inline: inline)
    }

    func checkNeighbor(
        _ family: IPFamily, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64, routine: Bool
    ) {
        guard watched(family, "ask a next hop") else { return }
        if Simulation.gatewayAddress(interfaceIndex, v6: family == .v6) != gateway {
            violation("asked \(gateway), which is not interface \(interfaceIndex)'s next hop")
        }
        checkNeighbor(family, generation: generation)
    }

    func probeBeyond(_ family: IPFamily, host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64) {
        guard watched(family, "probe past the gateway") else { return }
        if hops != 2 { violation("probed past the gateway with TTL \(hops), not 2") }
        probeBeyond(family, generation: generation)
    }

    func reportChanged(_ family: IPFamily, old: ProbeReport, new: ProbeReport) {
        reported.append(.reportChanged(old: old, new: new))
        simulation.targetsWithNews = true
    }

    func publish(_ update: (inout MonitorState) -> Void) {
        let before = state.status
        update(&state)
        if state.status != before { statuses.append((now, state.status, state.reason)) }
        // The rules on what was published are checked once the step's work is done.
        stateDue = true
        simulation.targetsWithNews = true
    }

    func verdictReady() {
        reported.append(.verdictReady)
        simulation.targetsWithNews = true
    }

    func wakeUp(at deadline: Instant?) {
        wake = deadline
    }

    func settled() {}
}
