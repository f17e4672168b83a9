import DBusKit
import EventLoop
import MonitorContract
import MonitorService
import Timekeeping

/// One fuzz input: bytes turned into a message by libdbus, then, when it is a method
/// call, through the real ObjectServer dispatch of the whole service as the daemon
/// exports it (the default target with org.netobserver.Targets and the ObjectManager,
/// and two added targets), without engines, so no input makes anything resolve or
/// probe. Checks what must hold for any input; a violation traps, which is what the
/// fuzzer reports: one answer at most, none to NO_REPLY, every message sendable, no
/// reply over 64 KiB but Introspect's and GetManagedObjects', no dispatch over 50 ms.
public enum DBusFuzzHarness {
    /// Runs one input; returns how many messages the service sent for it.
    @discardableResult
    public static func run(_ bytes: [UInt8]) -> Int {
        guard let message = try? Message(wire: bytes), message.kind == .methodCall else { return 0 }
        let recorder = Recorder.shared
        let (server, objects) = startingService()
        let started = recorder.loop.now()
        server.dispatch(message)
        // One turn: end-of-turn work (PropertiesChanged, StatusChanged) goes out; pending calls stay pending.
        recorder.runOneTurn()
        let took = recorder.loop.now() - started
        withExtendedLifetime(objects) {}

        precondition(took < Self.slowestDispatch, "one call kept the loop \(took)")
        let answers = recorder.sent.filter { $0.kind == .methodReturn || $0.kind == .error }
        precondition(answers.count <= 1, "one call, \(answers.count) answers")
        precondition(message.expectsReply || answers.isEmpty, "a NO_REPLY call was answered")
        let unbounded = ["Introspect", "GetManagedObjects"].contains(message.member ?? "")
        for sent in recorder.sent {
            // Everything sent must be a message libdbus can put on the wire and read back.
            guard let wire = try? sent.serialized(), (try? Message(wire: wire)) != nil else {
                preconditionFailure("an unsendable \(sent.kind) message")
            }
            if sent.kind == .methodReturn || sent.kind == .error {
                precondition(
                    unbounded || wire.count <= DBusMethod.defaultReplyLimit,
                    "a \(wire.count)-byte answer to \(message.member ?? "?")")
            }
        }
        return recorder.sent.count
    }

    /// The whole service, as every input finds it: the default target and two added ones, with
    /// what announcing them sent already forgotten (it is not the input's doing).
    private static func startingService() -> (ObjectServer, ServiceObjects) {
        let server = ObjectServer(transport: Recorder.shared, machineID: "0123456789abcdef0123456789abcdef")
        let objects = ServiceObjects.withoutEngines(server: server, budget: PendingBudget())
        objects.addTarget(host: "198.18.0.2")
        objects.addTarget(host: "fd00::2")
        Recorder.shared.runOneTurn()
        Recorder.shared.sent.removeAll(keepingCapacity: true)
        return (server, objects)
    }

    /// Initialises the lazy globals a service uses (type signatures, tables) before the fuzzer
    /// counts allocations: each is made once for the process, which LeakSanitizer would
    /// otherwise report against the first input that touched it.
    public static func warmUp() {
        let (server, objects) = startingService()
        _ = server.introspect(MonitorContract.objectPath)
        withExtendedLifetime(objects) {}
    }

    /// No dispatch may hold the loop longer (INTERFACE.md, "Hostile callers").
    static let slowestDispatch = Duration.milliseconds(50)

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

        /// One loop turn: what the service does at the end of a turn goes out.
        func runOneTurn() {
            loop.schedule(after: .zero) { [loop] in loop.quit(status: 0) }
            _ = loop.run()
        }
    }
}
