/// The cores' output contract, stated once for whoever checks it (the simulation, the tests): at
/// most one publish, after every other action but the verdict being ready, which comes at most
/// once and last.
public enum OutputContract {
    /// What broke the contract in one step's `actions`; nil when kept.
    public static func broken<Action: Equatable>(_ actions: [Action], publish: Action, verdictReady: Action) -> String? {
        let ready = actions.indices.filter { actions[$0] == verdictReady }
        if ready.count > 1 || ready.contains(where: { $0 != actions.count - 1 }) {
            return "the verdict was ready \(ready.count) times, or before the step's last action"
        }
        let publishes = actions.indices.filter { actions[$0] == publish }
        if publishes.count > 1 || publishes.contains(where: { $0 != actions.count - 1 - ready.count }) {
            return "the state was published \(publishes.count) times, or before the step's last action"
        }
        return nil
    }
}
