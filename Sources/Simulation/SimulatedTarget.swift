import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import Timekeeping

/// One target of the simulation, as the daemon holds any target: the daemon's `TargetDriver`
/// around its `TargetCore`, acting on the shared simulated world (the kernel, the far hosts, the
/// resolver's thread, the check server, this machine's traffic, the next hop). Every target gets
/// the whole world: the ladder, the check, traffic, the diagnosis, its history, each family the
/// scenario has (a `SimulatedPath` each). Beside the driver it keeps what the invariants need,
/// counted from the world's side, never asked of the core.
final class SimulatedTarget: TargetWorld {
    /// The simulation owns its targets and every call into one comes from its run: the reference is
    /// not counted (an unowned one costs an atomic operation per read, and it is read at every step).
    unowned(unsafe) let simulation: Simulation
    /// The target's number (0, the default, is one of them; nothing here depends on it).
    let index: Int
    /// Its lookups go before the others' on the resolver's thread (as `Target.lookupsFirst`).
    let lookupsFirst: Bool
    let initialCore: TargetCore
    lazy var driver = TargetDriver(core: initialCore, world: self)
    /// Each family the scenario has, its path's world (IPv4's first); a family it lacks has none.
    private(set) var paths: [SimulatedPath] = []
    private var pathsByFamily: [SimulatedPath?] = [nil, nil]

    /// The probe settings in force (the simulation changes them, so it knows them without asking), and since when.
    var settings: ProbeSettings
    var lastSettingsChange = Instant.origin
    /// The state as last published, and every Status with when.
    var state = MonitorState()
    var statuses: [(at: Instant, status: Status, reason: String)] = []
    /// Pending Checks: when each arrived, and by when its verdict must be in.
    var pendingChecks: [(arrival: Instant, limit: Instant)] = []

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
        case reportChanged(IPFamily, old: ProbeReport, new: ProbeReport)
        case verdictReady
    }
    var stateDue = false
    /// Host's addresses in the simulated world, for the Host they were found for (a Host changes rarely).
    var hostAddresses: (host: String, addresses: [IPAddress]) = ("", [])
    /// Dual stack: the headline's figures (`Simulation.Headline`), counted for every target.
    var headline = Simulation.Headline()
    var lastPublished: (Status, Connectivity)?

    init(
        simulation: Simulation, index: Int, core: TargetCore, settings: ProbeSettings,
        routeIDs: [IPFamily: ReachabilityCore.TargetID], lookupsFirst: Bool
    ) {
        self.simulation = simulation
        self.index = index
        self.lookupsFirst = lookupsFirst
        self.settings = settings
        initialCore = core
        for family in simulation.families {
            guard let routeID = routeIDs[family] else { continue }
            let path = SimulatedPath(target: self, family: family, routeID: routeID)
            paths.append(path)
            pathsByFamily[TargetCore.index(of: family)] = path
        }
        paths.sort { TargetCore.index(of: $0.family) < TargetCore.index(of: $1.family) }
    }

    /// `family`'s path, nil when the scenario does not have that family.
    func path(_ family: IPFamily) -> SimulatedPath? { pathsByFamily[TargetCore.index(of: family)] }

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

    /// Only a dual-stack network that lost IPv4's routes may send the core looking for a NAT64 prefix by name
    /// (RFC 7050); the simulated resolver knows no `ipv4only.arpa`, so the routers' prefix is the one it finds.
    func resolveNat64(generation: UInt64) {
        guard paths.count == IPFamily.allCases.count, routedFamilies?.contains(.v4) != true else {
            return violation("looked for a NAT64 prefix on a network with IPv4 routes")
        }
        take(.nat64Resolved(generation: generation, .failure(ResolverFailure(message: "cannot resolve ipv4only.arpa"))))
    }

    func cancelResolutions() {
        // Answers to earlier generations under way still arrive: the core must ignore them.
        simulation.resolver.cancel(target: index, first: lookupsFirst)
    }

    /// A family the scenario does not have gets nothing but being let go of.
    private func watched(_ family: IPFamily, _ what: String) -> SimulatedPath? {
        if let path = path(family) { return path }
        violation("asked to \(what) in \(family), which this network does not have")
        return nil
    }

    func watchRoute(_ family: IPFamily, _ address: IPAddress?) {
        guard let path = path(family) else {
            if address != nil { violation("watched a route in \(family), which this network does not have") }
            return
        }
        path.watchRoute(address)
    }

    func aimProbes(_ family: IPFamily, at address: IPAddress?) -> ProbeMethod? {
        guard let path = path(family) else {
            if address != nil { violation("aimed probes in \(family), which this network does not have") }
            return nil
        }
        pendingChecks = []
        return path.aim(at: address)
    }

    func send(_ family: IPFamily, sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        watched(family, "send")?.send(
            sequence: sequence, token: token, forCheck: forCheck, extra: extra, alsoTCP: alsoTCP)
    }

    func startCheck(_ family: IPFamily, url: String, generation: UInt64, limitMilliseconds: UInt32) {
        watched(family, "check")?.startCheck(generation, limit: .milliseconds(limitMilliseconds))
    }

    func cancelCheck(_ family: IPFamily) {
        path(family)?.runningCheck = nil
    }

    func sampleTraffic(
        _ family: IPFamily, generation: UInt64, host: IPAddress, route: HostRoute?, interface: String, inline: Bool
    ) -> TrafficSampling {
        guard let path = watched(family, "sample traffic") else { return .now(nil, cost: .zero) }
        return path.sampleTraffic(generation: generation, inline: inline)
    }

    func checkNeighbor(
        _ family: IPFamily, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64, routine: Bool
    ) {
        // The service that adopted the target asks them (`ServiceCore.Event.neighborAsked`), shared.
        violation("asked the world to check \(gateway) on interface \(interfaceIndex): the service asks next hops")
    }

    func probeBeyond(_ family: IPFamily, host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64) {
        guard watched(family, "probe past the gateway") != nil else { return }
        if hops != 2 { violation("probed past the gateway with TTL \(hops), not 2") }
        probeBeyond(family, generation: generation)
    }

    func reportChanged(_ family: IPFamily, old: ProbeReport, new: ProbeReport) {
        reported.append(.reportChanged(family, old: old, new: new))
        simulation.targetsWithNews = true
    }

    func publish(_ update: (inout MonitorState) -> Void) {
        let before = state.status
        update(&state)
        if simulation.service.firstVerdictsHeldSince != nil, state.connectivity != .unknown {
            violation("a verdict (\(state.connectivity)) was published while the first verdicts wait for the services")
        }
        if state.status != before { statuses.append((now, state.status, state.reason)) }
        // The rules on what was published are checked once the step's work is done.
        stateDue = true
        simulation.targetsWithNews = true
    }

    func verdictReady() {
        reported.append(.verdictReady)
        simulation.targetsWithNews = true
    }

    /// The service's driver keeps every target's wake-up (`ServiceDriver.nextWakeup`), which the run loop reads.
    func wakeUp(at deadline: Instant?) {
    }

    func settled() {}

    /// The engines suspended (a sleep announced or found): every path's probes in flight are forgotten.
    func forgetProbesInFlight() {
        for path in paths { path.forgetProbesInFlight() }
    }

    /// Whether the path to Host works now, for each family.
    func notePath() {
        for path in paths { path.notePath() }
    }
}
