/// An incoming method call, answerable now or later (exactly once).
public final class MethodCall {
    public let message: Message
    public let arguments: [DBusValue]
    public let sender: String
    private let send: (Message) -> Void
    public private(set) var isAnswered = false

    init(message: Message, arguments: [DBusValue], send: @escaping (Message) -> Void) {
        self.message = message
        self.arguments = arguments
        self.sender = message.sender ?? ""
        self.send = send
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
