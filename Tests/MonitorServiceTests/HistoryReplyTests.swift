import DBusKit
import EventLoop
@testable import MonitorService
import MonitorContract
import MonitorRules
import Timekeeping
import XCTest

/// GetHistory through the real dispatch: newest first, `max` at most, and within the 64 KiB reply bound
/// however long the Reasons kept.
final class HistoryReplyTests: XCTestCase {
    func getHistory(
        _ server: ObjectServer, _ recorder: MessageRecorder, max: UInt32
    ) throws -> (bytes: Int, entries: [DBusValue]) {
        let message = try Message.methodCall(
            destination: MonitorContract.busName, path: MonitorContract.objectPath,
            interface: MonitorContract.interface, member: "GetHistory")
        try message.append([.uint32(max)])
        try message.setSender(":1.5")
        message.setSerial(1)
        server.dispatch(message)
        let reply = try XCTUnwrap(recorder.sent.last)
        guard case .array(_, let entries)? = try reply.arguments().first else {
            XCTFail("not an array"); return (0, [])
        }
        return (try reply.serialized().count, entries)
    }

    func testTheReplyKeepsToItsBoundAndItsMax() throws {
        let recorder = try MessageRecorder()
        let server = ObjectServer(transport: recorder, machineID: "0123456789abcdef0123456789abcdef")
        let objects = ServiceObjects.withoutEngines(server: server, budget: PendingBudget { _, answer in answer(0) })
        let model = objects.model
        let kept = (0..<1_000).map {
            Outage(
                start: WallTime(microseconds: UInt64($0)), duration: .seconds(5), blame: "upstream", worst: .limited,
                reason: String(repeating: "r", count: 512))
        }
        model.outages = { count in Array(kept.suffix(count).reversed()) }
        let (bytes, entries) = try getHistory(server, recorder, max: 1_000)
        XCTAssertLessThanOrEqual(bytes, MonitorContract.historyReplyBytes)
        XCTAssertGreaterThan(entries.count, 50)
        XCTAssertLessThan(entries.count, 1_000, "fewer entries when they would not fit")
        XCTAssertEqual(
            entries.first,
            .structure([
                .uint64(999), .uint64(5_000_000), .string("upstream"), .string("limited"),
                .string(String(repeating: "r", count: 512)),
            ]), "newest first")
        XCTAssertEqual(try getHistory(server, recorder, max: 3).entries.count, 3)
        XCTAssertEqual(try getHistory(server, recorder, max: 0).entries.count, 0)
        withExtendedLifetime(objects) {}
    }
}
