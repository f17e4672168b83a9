import DBusKit
import MonitorContract

/// What the service exports, wired the same way for the daemon and the fuzzer: the
/// default target's Monitor at MonitorContract.objectPath, which also carries
/// org.netobserver.Targets and the ObjectManager of the added targets below it.
public final class ServiceObjects {
    public let monitor: MonitorObject
    let targets: TargetSet

    /// `engines`: the default target's (nil without engines); `makeEngines`: an added target's.
    init(server: ObjectServer, model: MonitorModel, budget: PendingBudget, engines: ConnectivityMonitor?,
         persisted: [MonitorSettings.Key: String] = [:], history: HistoryBook? = nil, makeEngines: TargetSet.EngineFactory?) {
        targets = TargetSet(loop: server.loop, server: server, budget: budget, history: history, makeEngines: makeEngines)
        monitor = MonitorObject(model: model, server: server, budget: budget, extraInterfaces: [targets.declaration()])
        server.manageObjects(under: MonitorContract.objectPath)
        targets.adoptDefault(model: model, object: monitor, connectivity: engines, persisted: persisted)
    }

    /// The objects alone, with no engine behind any target: nothing is resolved or probed.
    /// For the fuzzer, which must send no packet whatever Host an input sets.
    public static func withoutEngines(server: ObjectServer, model: MonitorModel, budget: PendingBudget) -> ServiceObjects {
        ServiceObjects(server: server, model: model, budget: budget, engines: nil, makeEngines: nil)
    }

    /// The added targets' paths, in order.
    public var targetPaths: [String] { targets.paths }

    /// Adds a target as --target does (not persisted); for the fuzzer's starting state.
    @discardableResult
    public func addTarget(host: String) -> String? {
        var settings = MonitorSettings()
        guard (try? settings.set(.host, text: host)) != nil,
              let target = try? targets.add(settings: settings, fromCommandLine: true, persisted: [:]) else { return nil }
        return MonitorContract.Targets.path(target.number)
    }
}
