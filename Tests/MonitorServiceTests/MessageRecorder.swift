import DBusKit
import EventLoop

/// Stands in for the bus: keeps every message an ObjectServer sends, on a loop of its own.
final class MessageRecorder: MessageTransport {
    let loop: MainLoop
    var sent: [Message] = []
    init() throws { loop = try MainLoop() }
    func send(_ message: Message) { sent.append(message) }
    var errors: [String] { sent.compactMap(\.errorName) }
}
