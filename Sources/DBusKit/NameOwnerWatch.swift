/// Follows which connection owns a well-known bus name: GetNameOwner once, then
/// NameOwnerChanged, all asynchronous on the loop.
public final class NameOwnerWatch {
    public let name: String
    /// The owner's unique name; nil while nobody owns the name (or before the bus answered).
    public private(set) var owner: String?
    /// False until the bus said who owns the name (or that nobody does).
    public private(set) var isKnown = false
    /// After every change of owner, and once when the first answer is in.
    public var onChange: ((_ owner: String?) -> Void)?
    private var subscription: SignalSubscription?
    private var query: PendingReply?
    private weak var connection: BusConnection?

    static let bus = "org.freedesktop.DBus"

    public init(connection: BusConnection, name: String) {
        self.name = name
        self.connection = connection
        subscription = connection.subscribe(
            MatchRule(
                sender: Self.bus, path: "/org/freedesktop/DBus", interface: Self.bus,
                member: "NameOwnerChanged", arg0: name)
        ) { [weak self] message in
            guard let self, let arguments = try? message.arguments(), arguments.count == 3,
                arguments[0].stringValue == name, let newOwner = arguments[2].stringValue
            else { return }
            query?.cancel()
            settle(newOwner.isEmpty ? nil : newOwner)
        }
        guard let call = try? Message.busCall("GetNameOwner", [.string(name)]) else {
            settle(nil)
            return
        }
        query = connection.call(call) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let reply): settle(reply.firstStringArgument)
            case .failure: settle(nil)
            }
        }
    }

    /// Asks the bus now and waits for the answer, for a program that must know the owner
    /// before it hears anyone (a command-line client at start-up; never a service's loop).
    public func askNow(timeoutMilliseconds: Int32 = 5_000) {
        guard let connection, let call = try? Message.busCall("GetNameOwner", [.string(name)]) else { return }
        query?.cancel()
        settle((try? connection.callBlocking(call, timeoutMilliseconds: timeoutMilliseconds))?.firstStringArgument)
    }

    private func settle(_ newOwner: String?) {
        let first = !isKnown
        isKnown = true
        guard first || newOwner != owner else { return }
        owner = newOwner
        onChange?(newOwner)
    }
}
