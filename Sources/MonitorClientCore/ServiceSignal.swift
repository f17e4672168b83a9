import DBusKit
import MonitorContract

/// A PropertiesChanged of org.netobserver.Monitor as the client takes it: only from the
/// connection that owns the service's name (checked on the header, before anything of
/// the body is read), only with the declared signature, only for `path` (or any
/// target's with `allTargets`).
public struct ServiceSignal: Sendable {
    public let path: String
    public let changed: [String: DBusValue]

    public init?(_ message: Message, owner: String?, path own: String, allTargets: Bool) {
        guard let owner, let sender = message.sender, sender == owner,
            message.isSignal(interface: MonitorContract.propertiesInterface, member: "PropertiesChanged"),
            message.signature == "sa{sv}as",
            let from = message.path, allTargets ? MatchRule.path(from, isIn: MonitorContract.objectPath) : from == own,
            let arguments = try? message.arguments(), arguments.count == 3,
            arguments[0].stringValue == MonitorContract.interface, let changed = arguments[1].propertyMap
        else { return nil }
        path = from
        self.changed = changed
    }
}
