/// Signals reaching a handler through `BusConnection.subscribe`; cancelled
/// (and its match rule removed from the bus) by `cancel()` or on release.
public final class SignalSubscription {
    private weak var connection: BusConnection?
    private let id: UInt64
    private let rule: String

    init(connection: BusConnection, id: UInt64, rule: String) {
        self.connection = connection
        self.id = id
        self.rule = rule
    }

    deinit {
        cancel()
    }

    public func cancel() {
        connection?.unsubscribe(id, rule: rule)
        connection = nil
    }
}
