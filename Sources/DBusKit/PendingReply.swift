import CDBus

/// A method call sent with `BusConnection.call`, whose reply is still to come.
///
/// The reply handler runs on the loop, once, when the reply, an error or the
/// timeout arrives; `cancel()` (or the last reference going) drops it unheard.
public final class PendingReply {
    private var raw: OpaquePointer?
    fileprivate var handler: ((Result<Message, DBusError>) -> Void)?
    /// Set for a call whose caller keeps no reference (`BusConnection.send`): until it is answered.
    private var keptUntilAnswered: PendingReply?

    fileprivate init(handler: @escaping (Result<Message, DBusError>) -> Void) {
        self.handler = handler
    }

    deinit {
        cancel()
    }

    /// True until the handler ran or the call was cancelled.
    public var isPending: Bool { handler != nil }

    /// Forgets the call: its reply, when it comes, is discarded.
    public func cancel() {
        handler = nil
        keptUntilAnswered = nil
        guard let raw else { return }
        self.raw = nil
        dbus_pending_call_cancel(raw)
        dbus_pending_call_unref(raw)
    }

    fileprivate func attach(_ pending: OpaquePointer) {
        raw = pending
    }

    fileprivate func keepUntilAnswered() {
        if isPending { keptUntilAnswered = self }
    }

    fileprivate func complete(_ result: Result<Message, DBusError>) {
        guard let handler else { return }
        self.handler = nil
        // Released once this returns (the handler may still need what it captured).
        let kept = keptUntilAnswered
        keptUntilAnswered = nil
        defer { _ = kept }
        if let raw {
            self.raw = nil
            dbus_pending_call_unref(raw)
        }
        handler(result)
    }

    /// The outcome carried by a reply message: its arguments' message, or its error.
    fileprivate static func outcome(of reply: Message) -> Result<Message, DBusError> {
        guard reply.kind == .error else { return .success(reply) }
        let text = (try? reply.arguments())?.first?.stringValue ?? ""
        return .failure(DBusError(name: reply.errorName ?? DBusError.failed("").name, message: text))
    }
}

/// What libdbus keeps for a pending call: a weak link to its PendingReply, so an
/// abandoned call neither keeps its handler alive nor runs it.
private final class ReplyLink {
    weak var reply: PendingReply?
    init(_ reply: PendingReply) { self.reply = reply }
}

extension BusConnection {
    /// Sends a method call and returns at once; `handler` runs on the loop with the
    /// reply (an error reply as `.failure`), or with NoReply after `timeoutMilliseconds`.
    /// Keep the returned PendingReply: dropping it cancels the call.
    public func call(
        _ message: Message, timeoutMilliseconds: Int32 = 25_000,
        _ handler: @escaping (Result<Message, DBusError>) -> Void
    ) -> PendingReply {
        let reply = PendingReply(handler: handler)
        var pending: OpaquePointer? = nil
        guard isConnected, dbus_connection_send_with_reply(raw, message.raw, &pending, timeoutMilliseconds) != 0,
            let pending
        else {
            // Never call back from inside the caller's own call.
            loop.atEndOfTurn { [weak reply] in reply?.complete(.failure(.disconnected("not connected to the bus"))) }
            return reply
        }
        reply.attach(pending)
        let link = Unmanaged.passRetained(ReplyLink(reply)).toOpaque()
        guard dbus_pending_call_set_notify(pending, pendingCallNotify, link, releaseReplyLink) != 0 else {
            Unmanaged<ReplyLink>.fromOpaque(link).release()
            reply.cancel()
            return reply
        }
        return reply
    }

    /// `call` for a caller with nowhere to keep the PendingReply: the call lives until its
    /// handler has run (a reply, an error, the timeout, or the connection closing).
    public func send(
        _ message: Message, timeoutMilliseconds: Int32 = 25_000,
        replyHandler handler: @escaping (Result<Message, DBusError>) -> Void
    ) {
        call(message, timeoutMilliseconds: timeoutMilliseconds, handler).keepUntilAnswered()
    }
}

private func releaseReplyLink(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<ReplyLink>.fromOpaque(data).release()
}

private func pendingCallNotify(_ pending: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let pending, let data else { return }
    let link = Unmanaged<ReplyLink>.fromOpaque(data).takeUnretainedValue()
    guard let reply = link.reply, reply.isPending, let raw = dbus_pending_call_steal_reply(pending) else { return }
    let message = Message(taking: raw)
    reply.complete(PendingReply.outcome(of: message))
}
