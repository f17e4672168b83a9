import Cellular
import EventLoop
import Glibc
import HTTPCheck
import NetCore
import Probe
import Reachability

/// The driver around one target's `TargetCore`: it turns what the resolver, the route watch,
/// the probe transport, the check of CheckURL and the clock say into events, and the core's
/// actions into calls on them; the state the core computes goes to the model. No policy
/// here, and no re-entry: what happens while actions are carried out is queued and handed
/// to the core after them.
public final class ConnectivityMonitor {
    private let loop: MainLoop
    private let model: MonitorModel
    private let reachability: (any RouteWatch)?
    /// The engine this monitor's route watch is on: its own, or one shared with other targets.
    public let reachabilityEngine: ReachabilityEngine?
    private let transport: any ProbeTransporting
    private let resolver: HostResolver
    private let resolverOwner: UInt64
    /// The default target's lookups go before the other targets'.
    private let resolvesFirst: Bool
    private var core: TargetCore
    /// Shared by every target; libcurl is loaded on the first check.
    private let http: (any HTTPClientSource)?
    private var check: CheckRun?
    /// Shared by every target; nil when the kernel's sock_diag cannot be opened (every sample then fails).
    private let trafficSampler: TrafficSampler?
    /// At the core's next wake-up.
    private let wakeup: WakeupTimer
    private var queue: [Work] = []
    private var driving = false

    private enum Work {
        case event(TargetCore.Event)
        case actions([TargetCore.Action])
    }

    /// After every finished probe: a verdict is in (pending Checks answer then).
    public var onVerdictReady: (() -> Void)?

    /// `sharedReachability`: an engine already watching the kernel's routes (another
    /// target's); this monitor then adds a watch to it instead of opening its own socket.
    /// `transport` and `routeWatch`: stand-ins for the sockets (driver tests); without them, real ones.
    public init(loop: MainLoop, model: MonitorModel, resolver: HostResolver? = nil,
                sharedReachability: ReachabilityEngine? = nil, probeSockets: ProbeSockets? = nil, http: (any HTTPClientSource)? = nil,
                dnsRefreshNanoseconds: UInt64 = MonitorCore.refreshNanoseconds, resolvesFirst: Bool = false,
                classifier: InterfaceClassifier = InterfaceClassifier(), trafficSampler: TrafficSampler? = nil,
                transport: (any ProbeTransporting)? = nil, routeWatch: (any RouteWatch)? = nil) throws(SystemError) {
        self.loop = loop
        self.trafficSampler = trafficSampler
        self.resolvesFirst = resolvesFirst
        self.model = model
        self.http = http
        wakeup = WakeupTimer(loop: loop)
        if let resolver {
            self.resolver = resolver
        } else {
            self.resolver = try HostResolver(loop: loop)
        }
        resolverOwner = self.resolver.newOwner()
        self.transport = transport ?? ProbeTransport(loop: loop, sockets: probeSockets)
        var problem: String?
        if let routeWatch {
            reachabilityEngine = nil
            reachability = routeWatch
        } else if let sharedReachability {
            reachabilityEngine = sharedReachability
            reachability = sharedReachability.watch()
        } else {
            do {
                let engine = try ReachabilityEngine(loop: loop, classifier: classifier) { _ in }
                reachabilityEngine = engine
                reachability = engine
            } catch {
                reachabilityEngine = nil
                reachability = nil
                problem = "cannot watch the kernel's routes: \(error)"
            }
        }
        core = Self.makeCore(model.settings, transport: self.transport, routeProblem: problem,
                             refreshNanoseconds: dnsRefreshNanoseconds, linkFacts: LinkFactsTable())
        wireUp()
    }

    /// A core for `settings`, probing in the transport's slot.
    private static func makeCore(_ settings: MonitorSettings, transport: any ProbeTransporting, routeProblem: String?,
                                 refreshNanoseconds: UInt64, linkFacts: LinkFactsTable) -> TargetCore {
        TargetCore(host: settings.host, family: settings.family, probeSettings: probeSettings(settings),
                   seed: UInt64.random(in: 0...UInt64.max), slot: transport.slot ?? 0, stride: transport.stride,
                   routeProblem: routeProblem, refreshNanoseconds: refreshNanoseconds, linkFacts: linkFacts)
    }

    deinit {
        resolver.cancelAll(owner: resolverOwner)
        check?.cancel()
    }

    private func wireUp() {
        wakeup.onFire = { [unowned self] in handle(.timeout) }
        transport.onInput = { [unowned self] input in handle(.probe(input)) }
        transport.isOutstanding = { [unowned self] in core.isOutstanding($0) }
        reachability?.onChange = { [unowned self] verdict in handle(.route(verdict, routedFamilies: routedFamilies)) }
        model.isThisMachine = { [unowned self] address in reachability?.table.isLocal(address) ?? false }
        model.probeNow = { [unowned self] in
            let (probing, actions) = core.check(now: loop.now())
            queue.append(.actions(actions))
            drive()
            return probing
        }
        reachability?.families = core.families
    }

    /// Starts resolving the Host; call once the model is exported.
    public func start() {
        handle(.start(checkURL: model.settings.checkURL))
    }

    /// ModemManager or NetworkManager changed what they say about links.
    public func linkFactsChanged(_ table: LinkFactsTable) {
        handle(.linkFacts(table))
    }

    /// The settings were restored from the state file before `start`: take them
    /// without looking anything up yet.
    public func settingsRestored() {
        core = Self.makeCore(model.settings, transport: transport, routeProblem: core.monitor.routeProblem,
                             refreshNanoseconds: core.monitor.refreshNanoseconds, linkFacts: core.monitor.linkFacts)
        reachability?.families = core.families
    }

    /// A setting changed over D-Bus (or at start).
    public func settingChanged(_ key: MonitorSettings.Key) {
        switch key {
        case .host, .family:
            handle(.targetChanged(host: model.settings.host, family: model.settings.family))
        case .interval, .timeout, .failureThreshold, .recoveryThreshold, .evidence:
            handle(.probeSettings(Self.probeSettings(model.settings)))
        case .checkURL:
            handle(.checkURL(model.settings.checkURL))
        }
    }

    static func probeSettings(_ settings: MonitorSettings) -> ProbeSettings {
        ProbeSettings(intervalMilliseconds: settings.interval, timeoutMilliseconds: settings.timeout,
                      failureThreshold: settings.failureThreshold, recoveryThreshold: settings.recoveryThreshold,
                      evidence: settings.evidence)
    }

    private var routedFamilies: Set<Int32>? {
        reachability.map { Set($0.table.defaultRoutes.map { Int32($0.family) }) }
    }

    // MARK: Events in, actions out

    private func handle(_ event: TargetCore.Event) {
        queue.append(.event(event))
        drive()
    }

    private func drive() {
        guard !driving else { return }
        driving = true
        defer { driving = false }
        while !queue.isEmpty {
            switch queue.removeFirst() {
            case .event(let event): carryOut(core.handle(event, now: loop.now()))
            case .actions(let actions): carryOut(actions)
            }
        }
        transport.forgetFinished()
        wakeup.arm(at: core.nextWakeup)
    }

    private func carryOut(_ actions: [TargetCore.Action]) {
        for action in actions {
            switch action {
            case .resolve(let host, let family, let generation):
                resolve(host, family, generation)
            case .cancelResolutions:
                resolver.cancelAll(owner: resolverOwner)
            case .watchRoute(let address, let families):
                reachability?.target = address
                reachability?.families = families
            case .probe(let address):
                // Before anything else queued: the core sends nothing until it knows how.
                queue.insert(.event(.probing(transport.retarget(address))), at: 0)
            case .send(let sequence, let token, _, _, let alsoTCP):
                transport.send(sequence: sequence, token: token, alsoTCP: alsoTCP)
            case .startCheck(let url, let generation, let limit):
                startCheck(url, generation, limitMilliseconds: Int(limit))
            case .cancelCheck:
                check?.cancel()
                check = nil
            case .sampleTraffic(let generation, let host, let interface, let inline):
                sampleTraffic(generation, host: host, interface: interface, inline: inline)
            case .verdictReady:
                onVerdictReady?()
            case .reportChanged(let old, let new):
                if let method = new.method, method != old.method, let target = transport.target {
                    Log.info("probing \(target) with \(method.rawValue)")
                }
            case .publish:
                let core = self.core
                model.update { state in state = core.state(previous: state) }
            }
        }
    }

    /// Samples the connections from the addresses on `interface`: at once when cheap (the answer is
    /// queued like any event), else on the sampler's thread.
    private func sampleTraffic(_ generation: UInt64, host: IPAddress, interface: String, inline: Bool) {
        guard let trafficSampler, let table = reachability?.table,
              let link = table.links.values.first(where: { $0.name == interface }) else {
            queue.append(.event(.trafficSampled(generation: generation, nil, cost: 0)))
            return
        }
        let sources = table.addresses(on: link.index, family: host.family).filter(\.isUsable).map(\.address)
        if inline, let (sample, cost) = trafficSampler.sampleNow(host: host, sources: sources) {
            queue.append(.event(.trafficSampled(generation: generation, sample, cost: cost)))
            return
        }
        trafficSampler.sampleLater(host: host, sources: sources) { [weak self] sample, cost in
            self?.handle(.trafficSampled(generation: generation, sample, cost: cost))
        }
    }

    /// One run of the check of CheckURL: lookup and GET within the limit the core gives.
    private func startCheck(_ url: String, _ generation: UInt64, limitMilliseconds limit: Int) {
        check?.cancel()
        check = CheckRun(url: url, limitMilliseconds: limit, mayPointInward: model.settings.checkURLMayPointInward,
                         isThisMachine: model.isThisMachine, first: resolvesFirst, loop: loop, resolver: resolver,
                         http: http) { [weak self] meaning in
            guard let self else { return }
            check = nil
            Log.info("check \(url): \(Self.describe(meaning))")
            handle(.checkAnswered(generation: generation, meaning))
        }
    }

    private static func describe(_ meaning: CheckAnswer.Meaning) -> String {
        switch meaning {
        case .expected: "answered as expected"
        case .portal(let url): "captive portal at \(url)"
        case .failed(let why): why
        }
    }

    private func resolve(_ host: String, _ family: AddressFamily, _ generation: UInt64) {
        let code: Int32 = switch family {
        case .any: AF_UNSPEC
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        }
        resolver.resolve(host, family: code, owner: resolverOwner, first: resolvesFirst) { [weak self] result in
            guard let self else { return }
            handle(.resolved(generation: generation, result, routedFamilies: routedFamilies))
        }
    }
}
