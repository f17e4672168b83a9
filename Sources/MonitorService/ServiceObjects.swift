import DBusKit
import MonitorContract

/// What the service exports, wired the same way for the daemon and the fuzzer: the
/// default target's Monitor at MonitorContract.objectPath, which also carries
/// org.netobserver.Targets and the ObjectManager of the added targets below it.
public final class ServiceObjects {
    public let monitor: MonitorObject
    /// The default target's model.
    public let model: MonitorModel
    let targets: TargetSet

    /// What the state file held that was ignored (each as the log says it).
    let restoreProblems: [String]

    /// Every target the state file keeps, as every target is made: the default one (number 0, its lookups
    /// first) from the command line's `settings` with the file's values but for the `flagged` keys, then the
    /// added ones; `makeEngines` makes each target's engines (nil: none).
    init(
        server: ObjectServer, settings: MonitorSettings, budget: PendingBudget,
        state: StoredState = StoredState(), flagged: Set<MonitorSettings.Key> = [],
        history: HistoryBook? = nil, makeEngines: TargetSet.EngineFactory?
    ) throws(DBusError) {
        targets = TargetSet(
            loop: server.loop, server: server, budget: budget, history: history, makeEngines: makeEngines)
        restoreProblems = try targets.restore(state, defaults: settings, flagged: flagged)
        guard let target = targets.defaultTarget else { throw .failed("the default target was not made") }
        monitor = target.object
        model = target.model
        server.manageObjects(under: MonitorContract.objectPath)
    }

    /// The objects alone, with no engine behind any target: nothing is resolved or probed.
    /// For the fuzzer, which must send no packet whatever Host an input sets.
    public static func withoutEngines(
        server: ObjectServer, settings: MonitorSettings = MonitorSettings(),
        budget: PendingBudget
    ) -> ServiceObjects {
        do {
            return try ServiceObjects(server: server, settings: settings, budget: budget, makeEngines: nil)
        } catch {
            // Without engines, nothing can fail: the set is empty and target 0 needs no socket.
            preconditionFailure("the default target without engines: \(error.message)")
        }
    }

    /// The added targets' paths, in order.
    public var targetPaths: [String] { targets.paths }

    /// Adds a target as --target does (not persisted); for the fuzzer's starting state.
    @discardableResult
    public func addTarget(host: String) -> String? {
        var settings = MonitorSettings()
        guard (try? settings.set(.host, text: host)) != nil,
            let target = try? targets.add(settings: settings, fromCommandLine: true, persisted: [:])
        else { return nil }
        return MonitorContract.Targets.path(target.number)
    }
}
