/// The cores' output contract, stated once for whoever checks it (the simulation, the tests): at
/// most one publish, after every other action but the verdict being ready, which comes at most
/// once and last.
public enum OutputContract {
    /// What broke the contract in one step's `actions`; nil when kept.
    public static func broken<Action: Equatable>(_ actions: [Action], publish: Action, verdictReady: Action) -> String? {
        // One pass, no allocation: it runs on every step of every simulated target.
        var ready = 0
        var readyLast = true
        var publishes = 0
        var publishedLast = true
        for (index, action) in actions.enumerated() {
            if action == verdictReady {
                ready += 1
                if index != actions.count - 1 { readyLast = false }
            } else if action == publish {
                publishes += 1
                publishedLast = index == actions.count - 1 || (index == actions.count - 2 && actions[index + 1] == verdictReady)
            }
        }
        if ready > 1 || !readyLast {
            return "the verdict was ready \(ready) times, or before the step's last action"
        }
        if publishes > 1 || !publishedLast {
            return "the state was published \(publishes) times, or before the step's last action"
        }
        return nil
    }
}
