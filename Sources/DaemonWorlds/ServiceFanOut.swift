import MonitorRules
import ProbeRules
import ReachabilityRules
import Timekeeping

/// Every target of the service, as the service's core reaches them.
public protocol ServiceTargets: AnyObject {
    /// The service's driver: the targets tell its core their route verdicts, their Timeouts and that one is gone,
    /// and it keeps their one wake-up (each target's driver adopted by number).
    var service: ServiceDriver? { get set }
    /// Target `number`'s deadline came.
    func wake(_ number: Int)
    /// A target's path takes its route verdict, with the view of the link it is routed over.
    func route(_ path: ServiceCore.PathKey, _ verdict: ReachabilityVerdict, link: LinkView?)
    /// A target's path hears its next hop's answer to its ask `generation`.
    func neighborAnswered(_ path: ServiceCore.PathKey, generation: UInt64, _ answer: NeighborAnswer)
    /// A target's path hears that its link `id` changed (nil: it is gone).
    func linkChanged(_ path: ServiceCore.PathKey, _ id: LinkID, _ view: LinkView?)
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
