import EventLoop
import Glibc
import NetCore
import Probe
import Reachability

/// Feeds the model from the engines: resolves Host off the loop, points the
/// reachability and probe engines at the chosen address, and combines their
/// verdicts with StatusRules on every change.
public final class ConnectivityMonitor {
    private let loop: MainLoop
    private let model: MonitorModel
    private let reachability: ReachabilityEngine?
    private let reachabilityProblem: String?
    private let probe: ProbeEngine
    private let resolver: HostResolver
    private var resolution: Resolution = .pending
    private var addresses: [IPAddress] = []
    private var resolveTimer: LoopTimer?
    private var failedResolutions = 0
    private var generation: UInt64 = 0
    private var lastRoute: ReachabilityVerdict?

    /// After every finished probe: a verdict is in (pending Checks answer then).
    public var onVerdictReady: (() -> Void)?

    static let refreshNanoseconds: UInt64 = 300 * 1_000_000_000

    public init(loop: MainLoop, model: MonitorModel, resolver: HostResolver? = nil,
                classifier: InterfaceClassifier = InterfaceClassifier()) throws(SystemError) {
        self.loop = loop
        self.model = model
        if let resolver {
            self.resolver = resolver
        } else {
            self.resolver = try HostResolver(loop: loop)
        }
        probe = ProbeEngine(loop: loop, settings: Self.probeSettings(model.settings)) { _ in }
        var reachabilityEngine: ReachabilityEngine?
        var problem: String?
        do {
            reachabilityEngine = try ReachabilityEngine(loop: loop, classifier: classifier) { _ in }
        } catch {
            problem = "cannot watch the kernel's routes: \(error)"
        }
        reachability = reachabilityEngine
        reachabilityProblem = problem
        wireUp()
    }

    private func wireUp() {
        probe.onReportChange = { [unowned self] old, new in
            if let method = new.method, method != old.method, let target = probe.target {
                Log.info("probing \(target) with \(method.rawValue)")
            }
            // A host that stops answering may have moved: look its name up again.
            if old.answering == true && new.answering == false { resolve() }
            update()
        }
        probe.onProbeFinished = { [unowned self] in onVerdictReady?() }
        reachability?.onChange = { [unowned self] verdict in routeChanged(verdict) }
        model.probeNow = { [unowned self] in
            guard case .resolved = resolution, reachability?.verdict?.usable != false else { return false }
            return probe.probeForCheck()
        }
        reachability?.families = families
    }

    /// Starts resolving the Host; call once the model is exported.
    public func start() {
        resolve()
        update()
    }

    /// The settings were restored from the state file before `start`: take them
    /// without looking anything up yet.
    public func settingsRestored() {
        probe.settings = Self.probeSettings(model.settings)
        reachability?.families = families
    }

    /// A setting changed over D-Bus (or at start).
    public func settingChanged(_ key: MonitorSettings.Key) {
        switch key {
        case .host, .family:
            restartTarget()
        case .interval, .timeout, .failureThreshold, .recoveryThreshold:
            probe.settings = Self.probeSettings(model.settings)
        }
    }

    static func probeSettings(_ settings: MonitorSettings) -> ProbeSettings {
        ProbeSettings(intervalMilliseconds: settings.interval, timeoutMilliseconds: settings.timeout,
                      failureThreshold: settings.failureThreshold, recoveryThreshold: settings.recoveryThreshold)
    }

    private var families: [Int32] {
        switch model.settings.family {
        case .any: [AF_INET, AF_INET6]
        case .ipv4: [AF_INET]
        case .ipv6: [AF_INET6]
        }
    }

    private func restartTarget() {
        generation += 1
        resolver.cancelAll()
        addresses = []
        resolution = .pending
        failedResolutions = 0
        lastRoute = nil
        probe.target = nil
        reachability?.target = nil
        reachability?.families = families
        resolve()
        update()
    }

    // MARK: Resolution

    private func resolve() {
        if let resolveTimer { loop.cancel(resolveTimer) }
        resolveTimer = nil
        let generation = self.generation
        let host = model.settings.host
        let family: Int32 = switch model.settings.family {
        case .any: AF_UNSPEC
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        }
        resolver.resolve(host, family: family) { [weak self] result in
            guard let self, generation == self.generation else { return }
            switch result {
            case .success(let found):
                failedResolutions = 0
                addresses = found
                chooseAddress()
                scheduleResolve(after: Self.refreshNanoseconds)
            case .failure(let failure):
                failedResolutions += 1
                // Keep probing a known address through a passing resolver failure.
                if case .resolved = resolution {} else {
                    resolution = .failed(failure.message)
                    probe.target = nil
                    reachability?.target = nil
                }
                let backoff = UInt64(min(60, 5 << min(failedResolutions - 1, 4)))
                scheduleResolve(after: backoff * 1_000_000_000)
                update()
            }
        }
    }

    private func scheduleResolve(after nanoseconds: UInt64) {
        if let resolveTimer { loop.cancel(resolveTimer) }
        resolveTimer = loop.schedule(after: nanoseconds) { [unowned self] in
            resolveTimer = nil
            resolve()
        }
    }

    /// `any`: the first address, in resolver order, whose family has a default route.
    private func chooseAddress() {
        guard !addresses.isEmpty else { return }
        var chosen = addresses[0]
        if model.settings.family == .any, let table = reachability?.table {
            let routed = Set(table.defaultRoutes.map { Int32($0.family) })
            chosen = addresses.first { routed.contains($0.family) } ?? addresses[0]
        }
        if case .resolved(let current) = resolution, current == chosen { return }
        resolution = .resolved(chosen)
        reachability?.target = chosen
        probe.target = chosen
        update()
    }

    // MARK: Verdicts

    private func routeChanged(_ verdict: ReachabilityVerdict) {
        let previous = lastRoute
        lastRoute = verdict
        if model.settings.family == .any, addresses.count > 1 { chooseAddress() }
        // A route gained or changed: probe at once, so recovery takes one round trip.
        if verdict.usable, case .resolved = resolution,
           previous?.usable != true || previous?.interface != verdict.interface {
            probe.routeRegained()
        }
        update()
    }

    private func update() {
        // The engine drops its verdict when its target changes, so a resolved address has
        // no route verdict until the kernel has answered for it.
        let route = reachabilityProblem.map { ReachabilityVerdict(usable: false, reason: $0) } ?? reachability?.verdict
        model.update { state in
            state = StatusRules.state(host: model.settings.host, resolution: resolution, route: route,
                                      probe: probe.report, previous: state)
        }
    }
}
