import CDBus

/// An incoming method call, answerable now or later (exactly once).
///
/// Dispatch has already compared the call's signature with the declaration,
/// so handlers read arguments of the declared types; nothing is decoded
/// until a handler asks for it.
public final class MethodCall {
    /// Our own reference to libdbus's message.
    let raw: OpaquePointer
    private let transport: MessageTransport
    // Single loads and stores: no access can overlap another, so the run-time check is left out.
    @exclusivity(unchecked) public private(set) var isAnswered = false
    /// The largest reply the called method may send (set at dispatch from its declaration).
    var replyLimit = DBusMethod.defaultReplyLimit

    init(raw: OpaquePointer, transport: MessageTransport) {
        self.raw = dbus_message_ref(raw)
        self.transport = transport
    }

    deinit {
        dbus_message_unref(raw)
    }

    /// The caller's unique bus name.
    public private(set) lazy var sender: String = dbus_message_get_sender(raw).map { String(cString: $0) } ?? ""

    /// False for calls sent with NO_REPLY_EXPECTED: no answer goes out, not even an error.
    public var expectsReply: Bool { dbus_message_get_no_reply(raw) == 0 }

    /// The uint32 argument at `index`; nil when there is none of that type.
    public func uint32(at index: Int) -> UInt32? {
        MessageReader.uint32(at: index, in: raw)
    }

    /// The string argument at `index` in the message's own buffer: valid while the call is handled.
    func cString(at index: Int) -> UnsafePointer<CChar>? {
        MessageReader.withString(at: index, in: raw) { $0 }
    }

    /// The first two arguments, both strings, in the message's own buffer (valid while the call is handled).
    func twoCStrings() -> (UnsafePointer<CChar>, UnsafePointer<CChar>)? {
        MessageReader.twoStrings(in: raw)
    }

    /// The value inside the variant argument at `index`, decoded only when its type is `expected`.
    public func variant(at index: Int, expected: DBusType) throws(DBusError) -> DBusValue {
        try MessageReader.variant(at: index, in: raw, expected: expected)
    }

    /// Every argument as typed values.
    public func arguments() throws(DBusError) -> [DBusValue] {
        try MessageReader.read(raw)
    }

    public func reply(_ values: [DBusValue]) {
        guard !isAnswered else { return }
        isAnswered = true
        guard expectsReply else { return }
        guard fits(values) else {
            if let reply = Message.error(
                answering: raw, .limitsExceeded("the reply would be larger than \(replyLimit / 1024) KiB"))
            {
                transport.send(reply)
            }
            return
        }
        do {
            transport.send(try Message.reply(to: raw, values))
        } catch {
            if let reply = Message.error(answering: raw, error) { transport.send(reply) }
        }
    }

    /// Whether a reply carrying `values` stays within the method's reply limit. The header (names, serials,
    /// the signature) is bounded by the bus; the body is ours.
    func fits(_ values: [DBusValue]) -> Bool {
        values.reduce(0, { $0 + $1.wireSizeBound }) <= replyLimit - 1_024
    }

    /// Answers with a copy of `template`: the marshalled body is copied, not built again.
    func reply(copying template: ReplyTemplate) {
        guard !isAnswered else { return }
        isAnswered = true
        guard expectsReply else { return }
        guard let copy = template.answer(raw) else { return fail(.failed("out of memory")) }
        transport.send(taking: copy)
    }

    public func fail(_ error: DBusError) {
        guard !isAnswered else { return }
        isAnswered = true
        guard expectsReply, let reply = Message.error(answering: raw, error) else { return }
        transport.send(reply)
    }
}
