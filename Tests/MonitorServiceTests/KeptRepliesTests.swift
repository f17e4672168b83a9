import DBusKit
import EventLoop
@testable import MonitorService
import MonitorContract
import XCTest

/// Get and GetAll answer from the reply they last marshalled while the model's version stays, and every
/// change of settings or state gives a fresh one: through the real dispatch, each reply addressed to its caller.
final class KeptRepliesTests: XCTestCase {
    private var serial: UInt32 = 0

    private func call(
        _ server: ObjectServer, _ recorder: MessageRecorder, sender: String, _ member: String,
        _ arguments: [DBusValue]
    ) throws -> (Message, [DBusValue]) {
        let message = try Message.methodCall(
            destination: MonitorContract.busName, path: MonitorContract.objectPath,
            interface: "org.freedesktop.DBus.Properties", member: member)
        try message.append(arguments)
        try message.setSender(sender)
        serial += 1
        message.setSerial(serial)
        server.dispatch(message)
        let reply = try XCTUnwrap(recorder.sent.last)
        XCTAssertEqual(reply.replySerial, serial, "the reply answers its own call")
        XCTAssertEqual(reply.destination, sender)
        return (reply, try reply.arguments())
    }

    func testRepliesAreKeptWhileNothingChangesAndAddressedToEachCaller() throws {
        let recorder = try MessageRecorder()
        let server = ObjectServer(transport: recorder, machineID: "0123456789abcdef0123456789abcdef")
        let objects = ServiceObjects.withoutEngines(server: server, budget: PendingBudget { _, answer in answer(0) })
        let model = objects.model
        let interface = DBusValue.string(MonitorContract.interface)
        func hostOf(_ values: [DBusValue]) -> String? {
            guard case .dictionary(_, _, let entries)? = values.first else { return nil }
            for entry in entries where entry.key == .string("Host") {
                if case .variant(.string(let host)) = entry.value { return host }
            }
            return nil
        }
        let (first, all) = try call(server, recorder, sender: ":1.7", "GetAll", [interface])
        XCTAssertEqual(first.destination, ":1.7")
        XCTAssertEqual(hostOf(all), MonitorSettings().host)
        let (second, again) = try call(server, recorder, sender: ":1.8", "GetAll", [interface])
        XCTAssertEqual(second.destination, ":1.8", "a kept reply goes to its own caller")
        XCTAssertEqual(again.count, all.count)
        XCTAssertEqual(hostOf(again), hostOf(all))
        // Callers taking turns, and one caller twice: every copy is addressed to its own caller and call.
        for sender in [":1.7", ":1.7", ":1.8", ":1.7", ":1.8", ":1.8"] {
            let (reply, values) = try call(server, recorder, sender: sender, "GetAll", [interface])
            XCTAssertEqual(reply.destination, sender)
            XCTAssertEqual(hostOf(values), hostOf(all))
        }
        try model.set(.host) { (settings: inout MonitorSettings) throws(SettingError) in
            try settings.set(.host, text: "198.18.0.9")
        }
        let (_, changed) = try call(server, recorder, sender: ":1.7", "GetAll", [interface])
        XCTAssertEqual(hostOf(changed), "198.18.0.9", "a setting changed: a fresh reply")
        let (_, one) = try call(server, recorder, sender: ":1.9", "Get", [interface, .string("Reason")])
        model.update { $0.reason = "something else" }
        let (_, fresh) = try call(server, recorder, sender: ":1.9", "Get", [interface, .string("Reason")])
        XCTAssertNotEqual(one.first, fresh.first, "the state changed: a fresh reply")
        XCTAssertEqual(fresh.first, .variant(.string("something else")))
        withExtendedLifetime(objects) {}
    }

    /// TimeInState grows without any change of the model: a kept reply never answers for it past its second.
    func testTimeInStateIsNeverAnsweredFromAnEarlierSecond() throws {
        let recorder = try MessageRecorder()
        let server = ObjectServer(transport: recorder, machineID: "0123456789abcdef0123456789abcdef")
        let objects = ServiceObjects.withoutEngines(server: server, budget: PendingBudget { _, answer in answer(0) })
        let model = objects.model
        var seconds: UInt64 = 7
        model.timeInState = { [("full", seconds)] }
        model.timeInStateTick = { seconds }
        let property: [DBusValue] = [.string(MonitorContract.interface), .string("TimeInState")]
        let (_, first) = try call(server, recorder, sender: ":1.7", "Get", property)
        seconds = 8
        let (_, second) = try call(server, recorder, sender: ":1.7", "Get", property)
        XCTAssertNotEqual(first.first, second.first, "a second later, a fresh value")
        XCTAssertEqual(
            second.first,
            .variant(
                .dictionary(key: .string, value: .uint64, [DBusDictEntry(key: .string("full"), value: .uint64(8))])))
        let (_, third) = try call(server, recorder, sender: ":1.7", "Get", property)
        XCTAssertEqual(third.first, second.first)
        withExtendedLifetime(objects) {}
    }
}
