import MonitorRules
import Timekeeping

/// Every target of the service, as the service's core reaches them.
public protocol ServiceTargets: AnyObject {
    /// Called before any target handles a wake-up.
    var beforeTargetWakes: (() -> Void)? { get set }
    func linkFactsChanged(_ table: LinkFactsTable)
    /// The machine goes to sleep (true) or woke (false).
    func sleep(_ asleep: Bool)
    func holdFirstVerdicts(_ hold: Bool)
}

/// The targets' outage histories, as the service's core keeps them.
public protocol ServiceHistories: AnyObject {
    func sleep(_ asleep: Bool)
    /// The machine slept this long without saying so.
    func slept(_ jump: Duration)
    func writeAll()
}
