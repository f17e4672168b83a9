import EventLoop

/// Where an ObjectServer sends its answers and signals, and the loop it runs
/// on: a BusConnection, or a recorder in tests and the fuzzer.
public protocol MessageTransport: AnyObject {
    var loop: MainLoop { get }
    func send(_ message: Message)
    /// Sends the message `raw` and lets go of the reference handed over (a reply made on the spot,
    /// with no Swift object around it).
    func send(taking raw: OpaquePointer)
}

extension MessageTransport {
    public func send(taking raw: OpaquePointer) { send(Message(taking: raw)) }
}

extension BusConnection: MessageTransport {}
