import DaemonWorlds
import MonitorRules
import NetAddress
import ProbeRules

/// A target's model as its world sees it (`TargetModel`), for the worlds' tests, which link no D-Bus face: what to
/// watch, and the state published, written as the service's model writes it (no Reason while connected; a change
/// only when something changed).
final class TestModel: TargetModel {
    private(set) var configuration: TargetConfiguration
    private(set) var state = MonitorState()
    /// Told after each change of the state.
    var onChange: (() -> Void)?
    var isThisMachine: (IPAddress) -> Bool = { _ in false }
    var probeNow: (() -> Bool)?

    init(_ configuration: TargetConfiguration) {
        self.configuration = configuration
    }

    convenience init(host: String, probe: ProbeSettings = ProbeSettings(), checkURL: String = "") {
        self.init(
            TargetConfiguration(host: host, family: .any, probe: probe, check: CheckConfiguration(url: checkURL)))
    }

    func update(_ change: (inout MonitorState) -> Void) {
        var new = state
        change(&new)
        if new.status.isConnected { new.reason = "" }
        guard new != state else { return }
        state = new
        onChange?()
    }

    /// Host Set: another target, whose state starts again from `unknown`, as the service's model resets it.
    func setHost(_ host: String) {
        configuration.host = host
        update { state in
            state = MonitorState()
            state.reason = "resolving \(host)"
        }
    }
}
