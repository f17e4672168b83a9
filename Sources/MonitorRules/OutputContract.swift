/// The cores' output contract, stated once for whoever checks it (the simulation, the tests): at
/// most one publish, after every other action but the verdict being ready, which comes at most
/// once and last.
public enum OutputContract {
    /// What the contract sees of an action.
    public enum Kind {
        case publish, verdictReady, other
    }

    /// What broke the contract in one step's `actions`, each seen through `kind`; nil when kept.
    public static func broken<Action>(_ actions: [Action], kind: (borrowing Action) -> Kind) -> String? {
        // One pass, no copy of an action: it runs on every step of every simulated target.
        var ready = 0
        var readyLast = true
        var publishes = 0
        var publishedLast = true
        actions.withUnsafeBufferPointer { actions in
            for index in actions.indices {
                switch kind(actions[index]) {
                case .verdictReady:
                    ready += 1
                    if index != actions.count - 1 { readyLast = false }
                case .publish:
                    publishes += 1
                    publishedLast =
                        index == actions.count - 1
                        || (index == actions.count - 2 && kind(actions[index + 1]) == .verdictReady)
                case .other:
                    break
                }
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
