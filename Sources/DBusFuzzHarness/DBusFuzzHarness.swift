import DBusKit
import EventLoop
import MonitorService

/// One fuzz input: bytes turned into a message by libdbus, then, when it is a
/// method call, through the real ObjectServer dispatch of a complete Monitor
/// object (every interface, property and method), answering into a recorder
/// instead of a bus. Checks what must hold for any input; a violation traps,
/// which is what the fuzzer reports.
public enum DBusFuzzHarness {
    /// Runs one input; returns how many messages the service sent for it.
    @discardableResult
    public static func run(_ bytes: [UInt8]) -> Int {
        guard let message = try? Message(wire: bytes), message.kind == .methodCall else { return 0 }
        let recorder = Recorder.shared
        recorder.sent.removeAll(keepingCapacity: true)
        let model = MonitorModel(settings: MonitorSettings())
        let server = ObjectServer(transport: recorder, machineID: "0123456789abcdef0123456789abcdef")
        let monitor = MonitorObject(model: model, server: server)
        server.dispatch(message)
        // One turn: end-of-turn work (PropertiesChanged, StatusChanged) goes out; pending calls stay pending.
        recorder.loop.schedule(after: 0) { recorder.loop.quit(status: 0) }
        _ = recorder.loop.run()
        withExtendedLifetime(monitor) {}

        let answers = recorder.sent.filter { $0.kind == .methodReturn || $0.kind == .error }
        precondition(answers.count <= 1, "one call, \(answers.count) answers")
        precondition(message.expectsReply || answers.isEmpty, "a NO_REPLY call was answered")
        for sent in recorder.sent {
            // Everything sent must be a message libdbus can put on the wire and read back.
            guard let wire = try? sent.serialized(), (try? Message(wire: wire)) != nil else {
                preconditionFailure("an unsendable \(sent.kind) message")
            }
        }
        return recorder.sent.count
    }

    /// Keeps what the server sends; one loop for every input, so a run costs no new descriptors.
    final class Recorder: MessageTransport {
        nonisolated(unsafe) static let shared = Recorder()
        let loop: MainLoop
        var sent: [Message] = []

        private init() {
            do {
                loop = try MainLoop()
            } catch {
                preconditionFailure("no epoll instance: \(error)")
            }
        }

        func send(_ message: Message) { sent.append(message) }
    }
}
