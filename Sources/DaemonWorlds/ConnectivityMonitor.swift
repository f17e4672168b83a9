import EventLoop
import Glibc
import HTTPCheck
import MonitorRules
import NetAddress
import NetCore
import Probe
import ProbeRules
import Reachability
import ReachabilityRules
import ServiceLog
import Timekeeping
import TrafficCensus

/// The world around one target's `TargetDriver`: it turns what the resolver, the route watch,
/// the probe transport, the check of CheckURL and the clock say into events, and carries out
/// what the driver asks on them; the state the core computes goes to the model. No policy
/// here, and no pump: the driver, which the simulation runs too, orders the work.
public final class ConnectivityMonitor {
    private let loop: MainLoop
    private let model: any TargetModel
    /// Each family's route watch (IPv4's, then IPv6's; see `TargetCore.index(of:)`); empty when routes are not watched.
    private let routeWatches: [any RouteWatch]
    /// The engine this monitor's route watches are on: its own, or one shared with other targets.
    public let reachabilityEngine: ReachabilityEngine?
    /// Each family's probe transport, in the same order.
    private let transports: [any ProbeTransporting]
    private let resolver: HostResolver
    private let resolverOwner: UInt64
    /// The default target's lookups go before the other targets'.
    private let resolvesFirst: Bool
    private let initialCore: TargetCore
    private lazy var driver = TargetDriver(core: initialCore, world: self)
    /// Shared by every target; libcurl is loaded on the first check.
    private let http: (any HTTPClientSource)?
    /// The authorities the secure check trusts instead of the system's (--ca-file); nil: the system's.
    private let caFile: String?
    private var checks: [CheckPairRun?] = [nil, nil]
    /// Each family's neighbour check while no service adopted the monitor (it then asks them, shared), and
    /// probe past the gateway under way.
    private var neighborChecks: [NeighborCheckRun?] = [nil, nil]
    private var beyondProbes: [BeyondProbeRun?] = [nil, nil]
    /// Shared by every target; nil when the kernel's sock_diag cannot be opened (every sample then fails).
    private let trafficSampler: TrafficSampler?
    /// At the core's next wake-up.
    private let wakeup: WakeupTimer
    /// DNS truth (nil: not asked, `Dns` stays `unknown`).
    private let dnsTruth: DnsTruthRun?
    private var dnsObservationDue = false

    /// After every finished probe: a verdict is in (pending Checks answer then).
    public var onVerdictReady: (() -> Void)?
    /// The core's deadline moved: the service's driver keeps the one wake-up of every target (`ServiceDriver.wake`),
    /// and hands `.timeout` back through `timeout()` (nil: a monitor on its own keeps a timer of its own).
    public var onWakeupMoved: (() -> Void)? {
        didSet { if onWakeupMoved != nil { wakeup.arm(at: nil) } }
    }
    /// The driver, for the service's to read its deadline.
    public var targetDriver: TargetDriver { driver }
    /// Each route verdict goes to the service's core, which hands it back through `routeDecided` with the view of
    /// the route's link (nil: the monitor takes its verdicts itself, with no link's view).
    public var onRouteVerdict: ((IPFamily, ReachabilityVerdict) -> Void)?

    /// `sharedReachability`: an engine already watching the kernel's routes (another
    /// target's); this monitor then adds a watch to it instead of opening its own socket.
    /// `transports` and `routeWatches`: stand-ins for the sockets, IPv4's then IPv6's (driver tests); without them, real ones.
    public init(
        loop: MainLoop, model: any TargetModel, resolver: HostResolver? = nil,
        sharedReachability: ReachabilityEngine? = nil, probeSockets: ProbeSockets? = nil,
        http: (any HTTPClientSource)? = nil,
        caFile: String? = nil,
        dnsRefresh: Duration = MonitorCore.refresh, resolvesFirst: Bool = false,
        classifier: InterfaceClassifier = InterfaceClassifier(), trafficSampler: TrafficSampler? = nil,
        transports: [any ProbeTransporting]? = nil, routeWatches: [any RouteWatch]? = nil,
        dnsAsking: DnsAsking? = nil, interceptions: InterceptionBook? = nil
    ) throws(SystemError) {
        self.loop = loop
        self.trafficSampler = trafficSampler
        self.resolvesFirst = resolvesFirst
        self.model = model
        self.http = http
        self.caFile = caFile
        wakeup = WakeupTimer(loop: loop)
        if let resolver {
            self.resolver = resolver
        } else {
            self.resolver = try HostResolver(loop: loop)
        }
        resolverOwner = self.resolver.newOwner()
        self.transports = transports ?? IPFamily.allCases.map { _ in ProbeTransport(loop: loop, sockets: probeSockets) }
        var problem: String?
        if let routeWatches {
            reachabilityEngine = nil
            self.routeWatches = routeWatches
        } else if let sharedReachability {
            reachabilityEngine = sharedReachability
            self.routeWatches = IPFamily.allCases.map { _ in sharedReachability.watch() }
        } else {
            do {
                let engine = try ReachabilityEngine(loop: loop, classifier: classifier)
                reachabilityEngine = engine
                self.routeWatches = IPFamily.allCases.map { _ in engine.watch() }
            } catch {
                reachabilityEngine = nil
                self.routeWatches = []
                problem = "cannot watch the kernel's routes: \(error)"
            }
        }
        let configuration = model.configuration
        dnsTruth = dnsAsking.map {
            DnsTruthRun(
                loop: loop, asking: $0, interceptions: interceptions ?? InterceptionBook(loop: loop),
                configuration: configuration)
        }
        initialCore = Self.makeCore(
            configuration, transports: self.transports, routeProblem: problem, refresh: dnsRefresh)
        wireUp()
    }

    /// A core for `configuration`, each family probing in its transport's slot.
    private static func makeCore(
        _ configuration: TargetConfiguration, transports: [any ProbeTransporting], routeProblem: String?,
        refresh: Duration
    ) -> TargetCore {
        var slots: [IPFamily: UInt16] = [:]
        for family in IPFamily.allCases { slots[family] = transports[TargetCore.index(of: family)].slot ?? 0 }
        return TargetCore(
            host: configuration.host, family: configuration.family, probeSettings: configuration.probe,
            seed: UInt64.random(in: 0...UInt64.max), slots: slots, stride: transports[0].stride,
            routeProblem: routeProblem, refresh: refresh)
    }

    deinit {
        resolver.cancelAll(owner: resolverOwner)
        for check in checks { check?.cancel() }
        for check in neighborChecks { check?.cancel() }
        for probe in beyondProbes { probe?.cancel() }
    }

    private func wireUp() {
        wakeup.onFire = { [unowned self] in handle(.timeout) }
        for family in IPFamily.allCases {
            let index = TargetCore.index(of: family)
            transports[index].onInput = { [unowned self] input in handle(.path(family, .probe(input))) }
            transports[index].isOutstanding = { [unowned self] sequence in
                driver.ask { $0.isOutstanding(family, sequence) }
            }
            if routeWatches.indices.contains(index) {
                routeWatches[index].families = [family]
                routeWatches[index].onChange = { [unowned self] verdict in
                    // The service routes it back with its link's view (`routeDecided`); a monitor on its own takes it.
                    guard let onRouteVerdict else { return handle(.path(family, .route(verdict))) }
                    onRouteVerdict(family, verdict)
                }
            }
        }
        model.isThisMachine = { [unowned self] address in routeWatches.first?.table.isLocal(address) ?? false }
        dnsTruth?.onChange = { [unowned self] view in
            let failure = model.state.dns.failure
            model.update { $0.dns = view }
            if view.failure != failure { handle(.freshLookups(failure: view.failure)) }
        }
        model.probeNow = { [unowned self] in driver.check() }
    }

    /// The core's deadline came (the service's one wake-up says so).
    public func timeout() {
        handle(.timeout)
    }

    /// Starts resolving the Host; call once the model is exported.
    public func start() {
        handle(.start(checkURL: model.configuration.check.shown))
    }

    /// The machine goes to sleep (true: nothing is sent) or woke (false: probe and ask the next hop at once).
    public func sleep(_ asleep: Bool) {
        handle(asleep ? .suspend : .resume)
        dnsTruth?.sleep(asleep)
    }

    /// The service's word on `family`'s route: the kernel's verdict, and the view of the link it uses.
    public func routeDecided(_ family: IPFamily, _ verdict: ReachabilityVerdict, link: LinkView?) {
        handle(.path(family, .route(verdict, link: link)))
    }

    /// `family`'s next hop answered its ask `generation` (the service's check, shared by the link's paths).
    public func neighborAnswered(_ family: IPFamily, generation: UInt64, _ answer: NeighborAnswer) {
        handle(.path(family, .neighborAnswered(generation: generation, answer)))
    }

    /// The service's word on link `id`, the one `family`'s route uses (nil: it is gone).
    public func linkChanged(_ family: IPFamily, _ id: LinkID, _ view: LinkView?) {
        handle(.path(family, .link(id, view)))
    }

    /// The target is now to watch as `new` says; `part` changed (a setting Set over D-Bus, or reloaded).
    public func configure(_ new: TargetConfiguration, changed part: TargetConfiguration.Part) {
        switch part {
        case .target:
            handle(.targetChanged(host: new.host, family: new.family))
            dnsTruth?.configure(new)
        case .probe(let timeoutChanged):
            handle(.probeSettings(new.probe))
            if timeoutChanged { dnsTruth?.configure(new) }
        case .dnsProbeZone:
            dnsTruth?.configure(new)
        case .check:
            handle(.checkURL(new.check.shown))
        }
    }

    private func handle(_ event: TargetCore.Event) {
        driver.handle(event)
    }

    private static func describe(_ meaning: CheckAnswer.Meaning) -> String {
        switch meaning {
        case .expected: "answered as expected"
        case .portal(let url): "captive portal at \(url)"
        case .failed(let why): why
        case .intercepted: "answered without the echo (intercepted)"
        case .limited(let reason, _): reason
        }
    }
}

/// What the driver asks, carried out on the loop's sockets, threads and the model.
extension ConnectivityMonitor: TargetWorld {
    public var now: Instant { loop.now() }

    public func interfaceIndex(named name: String) -> UInt32? { IPAddress.interfaceIndex(name) }

    public var routedFamilies: IPFamilies? {
        routeWatches.first?.table.routedFamilies
    }

    public func resolve(_ host: String, family: AddressFamily, generation: UInt64) {
        let code: Int32 =
            switch family {
            case .any: AF_UNSPEC
            case .ipv4: AF_INET
            case .ipv6: AF_INET6
            }
        resolver.resolve(host, family: code, owner: resolverOwner, first: resolvesFirst) { [weak self] result in
            guard let self else { return }
            handle(.resolved(generation: generation, result, routedFamilies: routedFamilies))
        }
    }

    public func resolveNat64(generation: UInt64) {
        resolver.resolve("ipv4only.arpa", family: AF_INET6, owner: resolverOwner, first: resolvesFirst) {
            [weak self] result in
            self?.handle(.nat64Resolved(generation: generation, result))
        }
    }

    public func cancelResolutions() {
        resolver.cancelAll(owner: resolverOwner)
    }

    public func watchRoute(_ family: IPFamily, _ address: IPAddress?) {
        let index = TargetCore.index(of: family)
        guard routeWatches.indices.contains(index) else { return }
        routeWatches[index].target = address
    }

    public func aimProbes(_ family: IPFamily, at address: IPAddress?) -> ProbeMethod? {
        transports[TargetCore.index(of: family)].retarget(address)
    }

    public func send(_ family: IPFamily, sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        transports[TargetCore.index(of: family)].send(sequence: sequence, token: token, alsoTCP: alsoTCP)
    }

    /// One run of the check of CheckURL over `family`: lookup and GET within the limit the core gives.
    public func startCheck(_ family: IPFamily, url: String, generation: UInt64, limitMilliseconds limit: UInt32) {
        let index = TargetCore.index(of: family)
        checks[index]?.cancel()
        checks[index] = CheckPairRun(
            model.configuration.check, caFile: caFile, family: family, limitMilliseconds: Int(limit),
            isThisMachine: model.isThisMachine,
            first: resolvesFirst, loop: loop, resolver: resolver, http: http
        ) { [weak self] meaning in
            guard let self else { return }
            checks[index] = nil
            Log.info("check \(url) over \(family): \(Self.describe(meaning))")
            handle(.path(family, .checkAnswered(generation: generation, meaning)))
        }
    }

    public func cancelCheck(_ family: IPFamily) {
        let index = TargetCore.index(of: family)
        checks[index]?.cancel()
        checks[index] = nil
    }

    /// At once when cheap, else on the sampler's thread; the census counts what is routed as the route core says
    /// Host is.
    public func sampleTraffic(
        _ family: IPFamily, generation: UInt64, host: IPAddress, route: HostRoute?, interface: String,
        inline: Bool
    ) -> TrafficSampling {
        guard let trafficSampler,
            let sources = routeWatches.first?.table.trafficSources(interface: interface, family: host.ipFamily)
        else {
            return .now(nil, cost: .zero)
        }
        if inline, let (sample, cost) = trafficSampler.sampleNow(host: host, route: route, sources: sources) {
            return .now(sample, cost: cost)
        }
        trafficSampler.sampleLater(host: host, route: route, sources: sources) { [weak self] sample, cost in
            self?.handle(.path(family, .trafficSampled(generation: generation, sample, cost: cost)))
        }
        return .later
    }

    public func reportChanged(_ family: IPFamily, old: ProbeReport, new: ProbeReport) {
        if let method = new.method, method != old.method, let target = transports[TargetCore.index(of: family)].target {
            Log.info("probing \(target) with \(method.rawValue)")
        }
    }

    public func checkNeighbor(
        _ family: IPFamily, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64,
        routine: Bool
    ) {
        let index = TargetCore.index(of: family)
        neighborChecks[index]?.cancel()
        neighborChecks[index] = NeighborCheckRun(
            loop: loop, gateway: gateway, interfaceIndex: interfaceIndex, source: IPAddress(source)
        ) { [weak self] answer in
            guard let self else { return }
            neighborChecks[index] = nil
            if answer != .reachable {
                Log.info("neighbour check of gateway \(gateway) over \(family): \(answer.rawValue)")
            }
            handle(.path(family, .neighborAnswered(generation: generation, answer)))
        }
    }

    public func probeBeyond(_ family: IPFamily, host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64) {
        let index = TargetCore.index(of: family)
        beyondProbes[index]?.cancel()
        beyondProbes[index] = BeyondProbeRun(loop: loop, host: host, gateway: gateway, hops: hops) {
            [weak self] answer in
            guard let self else { return }
            beyondProbes[index] = nil
            Log.info(
                "probe past gateway \(gateway) towards \(host): \(answer == .carried ? "a router past it answered" : "nothing came back")"
            )
            handle(.path(family, .beyondAnswered(generation: generation, answer)))
        }
    }

    public func publish(_ update: (_ state: inout MonitorState) -> Void) {
        model.update { current in update(&current) }
        observeForDnsTruth()
    }

    /// DNS truth hears the verdict once the step that published it is over (its answers step the driver).
    private func observeForDnsTruth() {
        guard let dnsTruth, !dnsObservationDue else { return }
        dnsObservationDue = true
        loop.atEndOfTurn { [weak self, weak dnsTruth] in
            guard let self, let dnsTruth else { return }
            dnsObservationDue = false
            let state = model.state
            if state.connectivity != .unknown { dnsTruth.start(state) }
            dnsTruth.observe(state)
        }
    }

    /// INTERFACE.md "Cellular generation and metered links": at start, while ModemManager's and NetworkManager's
    /// first answers are awaited (at most 1 s), the first verdict is held back, so that it already carries them
    /// (the core decides: `TargetCore.Event.holdFirstVerdict`).
    public func holdFirstVerdict(_ hold: Bool) {
        handle(.holdFirstVerdict(hold))
    }

    public func verdictReady() {
        onVerdictReady?()
    }

    public func wakeUp(at deadline: Instant?) {
        guard let onWakeupMoved else { return wakeup.arm(at: deadline) }
        onWakeupMoved()
    }

    public func settled() {
        for transport in transports { transport.forgetFinished() }
    }
}
