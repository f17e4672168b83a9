/// A D-Bus error: a well-known error name and a human-readable message.
public struct DBusError: Error, Equatable, Sendable, CustomStringConvertible {
    public let name: String
    public let message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    private static let prefix = "org.freedesktop.DBus.Error."

    public static func failed(_ message: String) -> DBusError { .init(name: prefix + "Failed", message: message) }
    public static func invalidArgs(_ message: String) -> DBusError {
        .init(name: prefix + "InvalidArgs", message: message)
    }
    public static func unknownMethod(_ message: String) -> DBusError {
        .init(name: prefix + "UnknownMethod", message: message)
    }
    public static func unknownObject(_ message: String) -> DBusError {
        .init(name: prefix + "UnknownObject", message: message)
    }
    public static func unknownInterface(_ message: String) -> DBusError {
        .init(name: prefix + "UnknownInterface", message: message)
    }
    public static func unknownProperty(_ message: String) -> DBusError {
        .init(name: prefix + "UnknownProperty", message: message)
    }
    public static func propertyReadOnly(_ message: String) -> DBusError {
        .init(name: prefix + "PropertyReadOnly", message: message)
    }
    public static func accessDenied(_ message: String) -> DBusError {
        .init(name: prefix + "AccessDenied", message: message)
    }
    public static func limitsExceeded(_ message: String) -> DBusError {
        .init(name: prefix + "LimitsExceeded", message: message)
    }
    public static func noReply(_ message: String) -> DBusError { .init(name: prefix + "NoReply", message: message) }
    public static func disconnected(_ message: String) -> DBusError {
        .init(name: prefix + "Disconnected", message: message)
    }
}
