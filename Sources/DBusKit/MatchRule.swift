/// A D-Bus match rule for signals, both as the text the bus daemon takes and
/// as a local test on received messages.
public struct MatchRule: Equatable, Sendable {
    /// A bus name: the bus matches a well-known one against its current owner.
    public var sender: String?
    public var path: String?
    /// The path and every path below it.
    public var pathNamespace: String?
    public var interface: String?
    public var member: String?
    /// The first argument, when it is a string.
    public var arg0: String?

    public init(
        sender: String? = nil, path: String? = nil, pathNamespace: String? = nil, interface: String? = nil,
        member: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule in the bus's syntax; nil when a part is not a valid name or path
    /// (nothing then reaches the bus, so no value can break out of its quotes).
    public var text: String? {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?, valid: (String) -> Bool) -> Bool {
            guard let value else { return true }
            guard valid(value) else { return false }
            parts.append("\(key)='\(value)'")
            return true
        }
        guard add("sender", sender, valid: Validation.isValidBusName),
            add("path", path, valid: Validation.isValidObjectPath),
            add("path_namespace", pathNamespace, valid: Validation.isValidObjectPath),
            add("interface", interface, valid: Validation.isValidInterfaceName),
            add("member", member, valid: Validation.isValidMemberName),
            add("arg0", arg0, valid: { Validation.isValidBusName($0) || Validation.isValidInterfaceName($0) })
        else {
            return nil
        }
        return parts.joined(separator: ",")
    }

    /// Whether a received signal fits the rule. A well-known `sender` cannot be
    /// checked here (the message names the owner's unique name): whoever follows
    /// that name's owner checks it.
    public func matches(_ message: Message) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, sender.hasPrefix(":") || sender == "org.freedesktop.DBus", message.sender != sender {
            return false
        }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        let messagePath = message.path ?? ""
        if let path, messagePath != path { return false }
        if let pathNamespace, !Self.path(messagePath, isIn: pathNamespace) { return false }
        if let arg0, message.firstStringArgument != arg0 { return false }
        return true
    }

    public static func path(_ path: String, isIn namespace: String) -> Bool {
        namespace == "/" || path == namespace || path.hasPrefix(namespace + "/")
    }
}
