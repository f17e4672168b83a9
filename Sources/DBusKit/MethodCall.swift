/// An incoming method call, answerable now or later (exactly once).
///
/// Dispatch has already compared the call's signature with the declaration,
/// so handlers read arguments of the declared types; nothing is decoded
/// until a handler asks for it.
public final class MethodCall {
    public let message: Message
    private let send: (Message) -> Void
    public private(set) var isAnswered = false

    init(message: Message, send: @escaping (Message) -> Void) {
        self.message = message
        self.send = send
    }

    /// The caller's unique bus name.
    public private(set) lazy var sender: String = message.sender ?? ""

    /// False for calls sent with NO_REPLY_EXPECTED: no answer goes out, not even an error.
    public var expectsReply: Bool { message.expectsReply }

    /// The string argument at `index`; nil when there is none of that type.
    public func string(at index: Int) -> String? {
        MessageReader.withString(at: index, in: message.raw) { String(cString: $0) }
    }

    /// The uint32 argument at `index`; nil when there is none of that type.
    public func uint32(at index: Int) -> UInt32? {
        MessageReader.uint32(at: index, in: message.raw)
    }

    /// The string argument at `index` in the message's own buffer: valid while the call is handled.
    func cString(at index: Int) -> UnsafePointer<CChar>? {
        MessageReader.withString(at: index, in: message.raw) { $0 }
    }

    /// The value inside the variant argument at `index`, decoded only when its type is `expected`.
    public func variant(at index: Int, expected: DBusType) throws(DBusError) -> DBusValue {
        try MessageReader.variant(at: index, in: message.raw, expected: expected)
    }

    /// Every argument as typed values.
    public func arguments() throws(DBusError) -> [DBusValue] {
        try message.arguments()
    }

    public func reply(_ values: [DBusValue]) {
        guard !isAnswered else { return }
        isAnswered = true
        guard message.expectsReply else { return }
        do {
            send(try message.makeReply(values))
        } catch {
            if let reply = message.makeError(error) { send(reply) }
        }
    }

    public func fail(_ error: DBusError) {
        guard !isAnswered else { return }
        isAnswered = true
        guard message.expectsReply, let reply = message.makeError(error) else { return }
        send(reply)
    }
}
