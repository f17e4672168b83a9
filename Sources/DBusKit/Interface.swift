/// One argument of a method or signal.
public struct DBusArgument: Sendable {
    public let name: String
    public let type: DBusType

    public init(_ name: String, _ type: DBusType) {
        self.name = name
        self.type = type
    }
}

public enum PropertyAccess: String, Sendable {
    case read, write, readwrite
}

/// How a property's changes reach clients (the EmitsChangedSignal annotation).
public enum PropertyChangeMode: Sendable {
    /// Sent with its value in PropertiesChanged (the default, no annotation).
    case emits
    /// Named in PropertiesChanged's invalidated list, without its value.
    case invalidates
    /// Never changes.
    case const
    /// Annotated `false`: never signals on its own, but its value rides along
    /// when another property of the same interface changes in the same turn.
    case quiet

    var annotation: String? {
        switch self {
        case .emits: nil
        case .invalidates: "invalidates"
        case .const: "const"
        case .quiet: "false"
        }
    }
}

/// What a method handler answers.
public enum MethodOutcome {
    case reply([DBusValue])
    /// The handler keeps the call and answers it later through `MethodCall.reply`/`fail`.
    case later
}

/// Declarations are classes: dispatch hands one on with a single retain, where a struct of strings,
/// arrays and closures is copied field by field on every call.
public final class DBusMethod {
    public let name: String
    public let inputs: [DBusArgument]
    public let outputs: [DBusArgument]
    public let handler: (MethodCall) throws(DBusError) -> MethodOutcome
    let inputSignature: String
    /// The same, as the C string libdbus compares (a short Swift string handed to C is copied into a new array on every call).
    let cInputSignature: ContiguousArray<CChar>
    /// The largest reply this method may send; a larger one is answered with an error instead.
    /// Only documents that grow with what the service exports (Introspect, GetManagedObjects) may be larger.
    let replyLimit: Int

    /// Every reply but the exempt documents' stays below this (INTERFACE.md, "Hostile callers").
    public static let defaultReplyLimit = 64 * 1024

    public init(
        _ name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [],
        replyLimit: Int = DBusMethod.defaultReplyLimit,
        handler: @escaping (MethodCall) throws(DBusError) -> MethodOutcome
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.replyLimit = replyLimit
        self.handler = handler
        inputSignature = inputs.map(\.type.signature).joined()
        cInputSignature = inputSignature.utf8CString
    }
}

public final class DBusProperty {
    public let name: String
    public let type: DBusType
    public let access: PropertyAccess
    public let changeMode: PropertyChangeMode
    public let get: () -> DBusValue
    /// Validates and stores a value of `type`, then answers the Set call now or
    /// later; throws (usually InvalidArgs) and changes nothing on error.
    public let set: ((DBusValue, MethodCall) throws(DBusError) -> MethodOutcome)?

    /// A property whose Set is answered as soon as the value is stored.
    public convenience init(
        _ name: String, _ type: DBusType, access: PropertyAccess = .read, changeMode: PropertyChangeMode = .emits,
        get: @escaping () -> DBusValue, set: ((DBusValue) throws(DBusError) -> Void)? = nil
    ) {
        var answeringSet: ((DBusValue, MethodCall) throws(DBusError) -> MethodOutcome)?
        if let set {
            answeringSet = { (value: DBusValue, _: MethodCall) throws(DBusError) -> MethodOutcome in
                try set(value)
                return .reply([])
            }
        }
        self.init(name, type, access: access, changeMode: changeMode, get: get, answeringSet: answeringSet)
    }

    /// A property whose setter answers the Set call itself (for example once the value is saved).
    public init(
        _ name: String, _ type: DBusType, access: PropertyAccess = .read, changeMode: PropertyChangeMode = .emits,
        get: @escaping () -> DBusValue, answeringSet: ((DBusValue, MethodCall) throws(DBusError) -> MethodOutcome)?
    ) {
        precondition((access == .read) == (answeringSet == nil), "property \(name): a setter exactly when writable")
        self.name = name
        self.type = type
        self.access = access
        self.changeMode = changeMode
        self.get = get
        self.set = answeringSet
    }
}

public struct DBusSignal: Sendable {
    public let name: String
    public let arguments: [DBusArgument]

    public init(_ name: String, _ arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// An interface declared once: dispatch, introspection and Properties all read it.
public final class DBusInterface {
    public let name: String
    public let methods: [DBusMethod]
    public let properties: [DBusProperty]
    public let signals: [DBusSignal]
    /// Changes whenever any property's value may have (nil: unknown); while it stays, GetAll answers
    /// with a copy of the reply it last marshalled.
    public let version: (() -> UInt64)?

    public init(
        _ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [], signals: [DBusSignal] = [],
        version: (() -> UInt64)? = nil
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
        self.version = version
    }

    public func method(named name: String) -> DBusMethod? { methods.first { $0.name == name } }
    public func property(named name: String) -> DBusProperty? { properties.first { $0.name == name } }
    public func signal(named name: String) -> DBusSignal? { signals.first { $0.name == name } }

    func method(named name: UnsafePointer<CChar>) -> DBusMethod? { methods.first { $0.name.equals(name) } }
    func property(named name: UnsafePointer<CChar>) -> DBusProperty? { properties.first { $0.name.equals(name) } }
}
