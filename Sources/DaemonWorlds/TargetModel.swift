import MonitorRules
import NetAddress

/// Where a target's world reads what it is asked to watch and writes the state its core computes:
/// the service's model behind its D-Bus object, or a test's.
public protocol TargetModel: AnyObject {
    var configuration: TargetConfiguration { get }
    var state: MonitorState { get }
    /// Applies a change to the state (its observers learn what changed).
    func update(_ change: (inout MonitorState) -> Void)
    /// Whether an address is one of this machine's, as the kernel last said (the world sets it).
    var isThisMachine: (IPAddress) -> Bool { get set }
    /// Asks for a fresh verdict; false when there is nothing to probe (the world sets it).
    var probeNow: (() -> Bool)? { get set }
}
