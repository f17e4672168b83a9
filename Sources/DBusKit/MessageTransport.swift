import EventLoop

/// Where an ObjectServer sends its answers and signals, and the loop it runs
/// on: a BusConnection, or a recorder in tests and the fuzzer.
public protocol MessageTransport: AnyObject {
    var loop: MainLoop { get }
    func send(_ message: Message)
}

extension BusConnection: MessageTransport {}
