import Cellular
import EventLoop
import Glibc
import HTTPCheck
import NetCore
import Probe
import Reachability

/// Feeds the model from the engines: the driver around `MonitorCore`. It resolves
/// Host on the resolver's thread, points the reachability and probe engines at the
/// address the core chooses, hands their verdicts to the core, and publishes the
/// state the core computes.
public final class ConnectivityMonitor {
    private let loop: MainLoop
    private let model: MonitorModel
    private let reachability: (any RouteWatch)?
    /// The engine this monitor's route watch is on: its own, or one shared with other targets.
    public let reachabilityEngine: ReachabilityEngine?
    private let probe: ProbeEngine
    private let resolver: HostResolver
    private let resolverOwner: UInt64
    /// The default target's lookups go before the other targets'.
    private let resolvesFirst: Bool
    private var core: MonitorCore
    /// Shared by every target; libcurl is loaded on the first check.
    private let http: LazyHTTPClient?
    private var check: CheckRun?
    /// At the core's next lookup or check.
    private let wakeup: WakeupTimer

    /// After every finished probe: a verdict is in (pending Checks answer then).
    public var onVerdictReady: (() -> Void)?

    /// `sharedReachability`: an engine already watching the kernel's routes (another
    /// target's); this monitor then adds a watch to it instead of opening its own socket.
    public init(loop: MainLoop, model: MonitorModel, resolver: HostResolver? = nil,
                sharedReachability: ReachabilityEngine? = nil, probeSockets: ProbeSockets? = nil, http: LazyHTTPClient? = nil,
                dnsRefreshNanoseconds: UInt64 = MonitorCore.refreshNanoseconds, resolvesFirst: Bool = false,
                classifier: InterfaceClassifier = InterfaceClassifier()) throws(SystemError) {
        self.loop = loop
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
        probe = ProbeEngine(loop: loop, settings: Self.probeSettings(model.settings), sockets: probeSockets) { _ in }
        var problem: String?
        if let sharedReachability {
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
        core = MonitorCore(host: model.settings.host, family: model.settings.family, routeProblem: problem,
                           refreshNanoseconds: dnsRefreshNanoseconds)
        wireUp()
    }

    deinit {
        resolver.cancelAll(owner: resolverOwner)
        check?.cancel()
    }

    private func wireUp() {
        wakeup.onFire = { [unowned self] in
            core.handleTimeout(now: loop.now())
            drive()
        }
        probe.onReportChange = { [unowned self] old, new in
            if let method = new.method, method != old.method, let target = probe.target {
                Log.info("probing \(target) with \(method.rawValue)")
            }
            core.probeReportChanged(from: old, to: new, now: loop.now())
            drive()
        }
        probe.onProbeFinished = { [unowned self] in onVerdictReady?() }
        reachability?.onChange = { [unowned self] verdict in
            core.routeChanged(verdict, routedFamilies: routedFamilies, now: loop.now())
            drive()
        }
        model.probeNow = { [unowned self] in core.canProbe && probe.probeForCheck() }
        reachability?.families = core.families
    }

    /// Starts resolving the Host; call once the model is exported.
    public func start() {
        core.start(now: loop.now())
        if !model.settings.checkURL.isEmpty { core.checkURLChanged(model.settings.checkURL, now: loop.now()) }
        drive()
    }

    /// ModemManager or NetworkManager changed what they say about links.
    public func linkFactsChanged(_ table: LinkFactsTable) {
        core.linkFactsChanged(table)
        drive()
    }

    /// The settings were restored from the state file before `start`: take them
    /// without looking anything up yet.
    public func settingsRestored() {
        let facts = core.linkFacts
        core = MonitorCore(host: model.settings.host, family: model.settings.family, routeProblem: core.routeProblem,
                           refreshNanoseconds: core.refreshNanoseconds)
        core.linkFactsChanged(facts)
        probe.settings = Self.probeSettings(model.settings)
        reachability?.families = core.families
    }

    /// A setting changed over D-Bus (or at start).
    public func settingChanged(_ key: MonitorSettings.Key) {
        switch key {
        case .host, .family:
            core.targetChanged(host: model.settings.host, family: model.settings.family, now: loop.now())
            drive()
        case .interval, .timeout, .failureThreshold, .recoveryThreshold:
            probe.settings = Self.probeSettings(model.settings)
        case .checkURL:
            core.checkURLChanged(model.settings.checkURL, now: loop.now())
            drive()
        }
    }

    static func probeSettings(_ settings: MonitorSettings) -> ProbeSettings {
        ProbeSettings(intervalMilliseconds: settings.interval, timeoutMilliseconds: settings.timeout,
                      failureThreshold: settings.failureThreshold, recoveryThreshold: settings.recoveryThreshold)
    }

    private var routedFamilies: Set<Int32>? {
        reachability.map { Set($0.table.defaultRoutes.map { Int32($0.family) }) }
    }

    // MARK: Carrying out what the core asks

    private func drive() {
        while case let outputs = core.takeOutputs(), !outputs.isEmpty {
            for output in outputs {
                switch output {
                case .resolve(let host, let family, let generation):
                    resolve(host, family, generation)
                case .cancelResolutions:
                    resolver.cancelAll(owner: resolverOwner)
                case .retarget(let address, let families):
                    reachability?.target = address
                    reachability?.families = families
                    probe.target = address
                case .routeRegained:
                    probe.routeRegained()
                case .stateChanged:
                    let core = self.core
                    model.update { state in state = core.state(previous: state) }
                case .startCheck(let url, let generation):
                    startCheck(url, generation)
                case .cancelCheck:
                    check?.cancel()
                    check = nil
                }
            }
        }
        wakeup.arm(at: core.nextWakeup)
    }

    /// One run of the check of CheckURL: lookup and GET within max(5 s, Timeout).
    private func startCheck(_ url: String, _ generation: UInt64) {
        check?.cancel()
        let limit = max(5_000, Int(model.settings.timeout))
        check = CheckRun(url: url, limitMilliseconds: limit, mayPointInward: model.settings.checkURLMayPointInward,
                         loop: loop, resolver: resolver, http: http) { [weak self] meaning in
            guard let self else { return }
            check = nil
            Log.info("check \(url): \(Self.describe(meaning))")
            core.checkAnswered(generation: generation, meaning, now: loop.now())
            drive()
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
            core.resolved(generation: generation, result, routedFamilies: routedFamilies, now: loop.now())
            drive()
        }
    }

}
