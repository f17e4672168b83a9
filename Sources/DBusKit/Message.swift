import CDBus

/// An owned reference to a libdbus message.
public final class Message: @unchecked Sendable {
    // @unchecked: a message is built or read on one thread and only handed over whole.
    let raw: OpaquePointer

    /// Takes over the caller's reference.
    init(taking raw: OpaquePointer) {
        self.raw = raw
    }

    /// Adds a reference of its own.
    init(retaining raw: OpaquePointer) {
        self.raw = dbus_message_ref(raw)
    }

    deinit {
        dbus_message_unref(raw)
    }

    public enum Kind: Sendable { case methodCall, methodReturn, error, signal, other }

    public var kind: Kind {
        switch dbus_message_get_type(raw) {
        case CDBus_MESSAGE_TYPE_METHOD_CALL: .methodCall
        case CDBus_MESSAGE_TYPE_METHOD_RETURN: .methodReturn
        case CDBus_MESSAGE_TYPE_ERROR: .error
        case CDBus_MESSAGE_TYPE_SIGNAL: .signal
        default: .other
        }
    }

    private static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    public var path: String? { Self.string(dbus_message_get_path(raw)) }
    public var interface: String? { Self.string(dbus_message_get_interface(raw)) }
    public var member: String? { Self.string(dbus_message_get_member(raw)) }
    public var sender: String? { Self.string(dbus_message_get_sender(raw)) }
    public var destination: String? { Self.string(dbus_message_get_destination(raw)) }
    public var errorName: String? { Self.string(dbus_message_get_error_name(raw)) }
    public var signature: String { Self.string(dbus_message_get_signature(raw)) ?? "" }

    /// How many elements the first argument holds when it is an array, counted without decoding any; nil otherwise.
    /// A reply can be read only once its size is known to be sane.
    public var firstArrayCount: Int? {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iterator) != 0,
            dbus_message_iter_get_arg_type(&iterator) == Int32(UInt8(ascii: "a"))
        else { return nil }
        return Int(dbus_message_iter_get_element_count(&iterator))
    }
    public var expectsReply: Bool { dbus_message_get_no_reply(raw) == 0 }
    /// The serial of the call a return or error answers (0: none).
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }

    /// The bus fills the sender in; tests and the fuzzer, which have no bus, set it themselves.
    public func setSender(_ sender: String) throws(DBusError) {
        guard Validation.isValidBusName(sender), dbus_message_set_sender(raw, sender) != 0 else {
            throw .invalidArgs("invalid sender")
        }
    }

    /// The bus connection numbers what it sends; without one, a test numbers its calls itself
    /// (a reply needs the call's serial).
    public func setSerial(_ serial: UInt32) {
        dbus_message_set_serial(raw, max(serial, 1))
    }

    public func isSignal(interface: String, member: String) -> Bool {
        dbus_message_is_signal(raw, interface, member) != 0
    }

    /// The first argument when it is a string.
    public var firstStringArgument: String? {
        MessageReader.withString(at: 0, in: raw) { String(cString: $0) }
    }

    /// The arguments as typed values.
    public func arguments() throws(DBusError) -> [DBusValue] {
        try MessageReader.read(raw)
    }

    /// Appends `values`; on error the message is unchanged in meaning and must not be sent.
    public func append(_ values: [DBusValue]) throws(DBusError) {
        try MessageWriter.append(values, to: raw)
    }

    // MARK: Wire form

    /// The message in D-Bus wire format.
    public func serialized() throws(DBusError) -> [UInt8] {
        // Unsent messages have no serial yet, and the wire format requires one.
        if dbus_message_get_serial(raw) == 0 { dbus_message_set_serial(raw, 1) }
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var length: Int32 = 0
        guard dbus_message_marshal(raw, &buffer, &length) != 0, let buffer else { throw .failed("out of memory") }
        defer { dbus_free(buffer) }
        return UnsafeRawBufferPointer(start: buffer, count: Int(length)).map { $0 }
    }

    /// Parses wire-format bytes; libdbus validates them completely.
    public convenience init(wire bytes: [UInt8]) throws(DBusError) {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let raw = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                dbus_message_demarshal($0.baseAddress, Int32(buffer.count), &error)
            }
        }
        guard let raw else {
            throw .invalidArgs(CDBus_error_message(&error).map { String(cString: $0) } ?? "malformed message")
        }
        self.init(taking: raw)
    }

    // MARK: Construction

    public static func methodCall(
        destination: String?, path: String, interface: String?, member: String
    ) throws(DBusError) -> Message {
        guard Validation.isValidObjectPath(path), Validation.isValidMemberName(member),
            interface.map(Validation.isValidInterfaceName) ?? true,
            destination.map(Validation.isValidBusName) ?? true
        else {
            throw .invalidArgs("invalid destination, path, interface or member")
        }
        guard let raw = dbus_message_new_method_call(destination, path, interface, member) else {
            throw .failed("out of memory")
        }
        return Message(taking: raw)
    }

    /// A call of the bus daemon's own `member` (org.freedesktop.DBus) with `arguments`.
    public static func busCall(_ member: String, _ arguments: [DBusValue]) throws(DBusError) -> Message {
        let message = try methodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: member)
        try message.append(arguments)
        return message
    }

    public static func signal(path: String, interface: String, name: String) throws(DBusError) -> Message {
        guard Validation.isValidObjectPath(path), Validation.isValidInterfaceName(interface),
            Validation.isValidMemberName(name)
        else {
            throw .invalidArgs("invalid signal path, interface or name")
        }
        guard let raw = dbus_message_new_signal(path, interface, name) else { throw .failed("out of memory") }
        return Message(taking: raw)
    }

    public func makeError(_ error: DBusError) -> Message? {
        Self.error(answering: raw, error)
    }

    static func reply(to call: OpaquePointer, _ values: [DBusValue]) throws(DBusError) -> Message {
        guard let reply = dbus_message_new_method_return(call) else { throw .failed("out of memory") }
        let message = Message(taking: reply)
        try MessageWriter.append(values, to: reply)
        return message
    }

    /// The longest error text sent, in bytes.
    static let maximumErrorText = 4_096

    static func error(answering call: OpaquePointer, _ error: DBusError) -> Message? {
        let name = Validation.isValidErrorName(error.name) ? error.name : DBusError.failed("").name
        // NULs would cut the text in C; everything else in a Swift string is valid UTF-8. Our
        // messages are one line: a longer one was built from something a caller sent, so it is cut.
        var bytes = Array(error.message.utf8.prefix(maximumErrorText).filter { $0 != 0 })
        if error.message.utf8.count > maximumErrorText {
            // Back to the start of a UTF-8 sequence, then the ellipsis.
            while let last = bytes.last, last & 0xC0 == 0x80 { bytes.removeLast() }
            if let last = bytes.last, last >= 0xC0 { bytes.removeLast() }
            bytes += Array("…".utf8)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return dbus_message_new_error(call, name, text).map { Message(taking: $0) }
    }
}
