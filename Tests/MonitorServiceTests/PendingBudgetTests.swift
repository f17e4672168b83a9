import DBusKit
import EventLoop
@testable import MonitorService
import MonitorContract
import XCTest

/// INTERFACE.md "No user starves the others": pending Waits counted per client over all
/// targets, per user, and in all with a share kept for root, through the real dispatch.
final class PendingBudgetTests: XCTestCase {
    private var recorder: MessageRecorder!
    private var server: ObjectServer!
    private var objects: ServiceObjects!
    private var budget: PendingBudget!
    /// The uid of each client, as the bus would say; answers held back while `holdAnswers`.
    private var uids: [String: UInt32] = [:]
    private var holdAnswers = false
    private var heldAnswers: [(String, (UInt32?) -> Void)] = []
    private var serial: UInt32 = 0

    override func setUpWithError() throws {
        recorder = try MessageRecorder()
        server = ObjectServer(transport: recorder, machineID: "0123456789abcdef0123456789abcdef")
        budget = PendingBudget { [unowned self] sender, answer in
            if holdAnswers { heldAnswers.append((sender, answer)) } else { answer(uids[sender]) }
        }
        objects = ServiceObjects.withoutEngines(server: server, budget: budget)
    }

    override func tearDown() {
        objects = nil
        server = nil
        recorder = nil
    }

    private func call(
        _ sender: String, _ member: String, path: String = MonitorContract.objectPath,
        interface: String = MonitorContract.interface, _ arguments: [DBusValue] = []
    ) throws {
        let message = try Message.methodCall(
            destination: MonitorContract.busName, path: path, interface: interface, member: member)
        try message.append(arguments)
        try message.setSender(sender)
        serial += 1
        message.setSerial(serial)
        server.dispatch(message)
    }

    private func waits(_ client: String, _ count: Int, path: String = MonitorContract.objectPath) throws {
        for _ in 0..<count { try call(client, "Wait", path: path, [.uint32(600_000)]) }
    }

    private func refusals() -> Int {
        recorder.errors.filter { $0 == "org.freedesktop.DBus.Error.LimitsExceeded" }.count
    }

    func testOneUserHoldsAtMost1024AndOthersStillWait() throws {
        for client in 0..<17 { uids[":1.\(client)"] = 1000 }
        for client in 0..<17 { try waits(":1.\(client)", 64) }
        XCTAssertEqual(budget.count(forUser: 1000), 1_024)
        XCTAssertEqual(refusals(), 64, "the 1,025th and later Waits of uid 1000")
        uids[":2.0"] = 1001
        uids[":2.1"] = 0
        try waits(":2.0", 1)
        try waits(":2.1", 1)
        XCTAssertEqual(refusals(), 64, "another user and root still wait")
        XCTAssertEqual(budget.inUse, 1_026)
    }

    func testRootKeeps256OfThe4096() throws {
        var client = 0
        // Four users fill the share everyone else may use: 3 × 1,024 + 768 = 3,840.
        for uid in UInt32(1000)...1003 {
            for _ in 0..<(uid == 1003 ? 12 : 16) {
                uids[":1.\(client)"] = uid
                try waits(":1.\(client)", 64)
                client += 1
            }
        }
        XCTAssertEqual(budget.inUse, 3_840)
        XCTAssertEqual(refusals(), 0)
        uids[":3.0"] = 1004
        try waits(":3.0", 1)
        XCTAssertEqual(refusals(), 1, "past 3,840 only root gets in")
        for index in 0..<5 { uids[":4.\(index)"] = 0 }
        for index in 0..<5 { try waits(":4.\(index)", 64) }
        XCTAssertEqual(budget.inUse, 4_096, "root filled the 256 kept for it")
        XCTAssertEqual(refusals(), 1 + 64)
        XCTAssertTrue(
            recorder.sent.compactMap { $0.errorName == nil ? nil : try? $0.arguments().first?.stringValue }
                .allSatisfy { $0.contains("pending") }, "the refusals say why")
    }

    func testSixtyFourWaitsPerClientCountOverEveryTarget() throws {
        uids[":1.0"] = 1000
        try call(
            ":1.0", MonitorContract.Targets.addTarget, interface: MonitorContract.Targets.interface,
            [.string("198.18.0.2")])
        let added = try XCTUnwrap(objects.targetPaths.first)
        try waits(":1.0", 40)
        try waits(":1.0", 24, path: added)
        XCTAssertEqual(refusals(), 0)
        try waits(":1.0", 1, path: added)
        try waits(":1.0", 1)
        XCTAssertEqual(refusals(), 2, "64 Waits per client over both targets")
        uids[":1.1"] = 1000
        try waits(":1.1", 1, path: added)
        XCTAssertEqual(refusals(), 2, "another client of the same user")
    }

    func testCallsWaitForTheUserAndGoWithTheirClient() throws {
        holdAnswers = true
        try waits(":1.0", 3)
        try waits(":1.1", 2)
        XCTAssertEqual(budget.inUse, 0, "nothing counts before the bus named the user")
        XCTAssertEqual(heldAnswers.count, 2, "one question per client")
        budget.clientVanished(":1.1")
        let answers = heldAnswers
        heldAnswers = []
        for (sender, answer) in answers { answer(sender == ":1.0" ? 1000 : 1001) }
        XCTAssertEqual(budget.inUse, 3)
        XCTAssertEqual(budget.count(forUser: 1000), 3)
        XCTAssertEqual(budget.count(forUser: 1001), 0, "the client that left has nothing pending")
        XCTAssertTrue(recorder.sent.isEmpty, "admitted Waits are pending, not answered")
        // A client the bus cannot name counts as a user that is not root.
        try waits(":1.2", 1)
        XCTAssertEqual(heldAnswers.count, 1)
        heldAnswers[0].1(nil)
        XCTAssertEqual(budget.count(forUser: PendingBudget.unknownUser), 1)
    }

    func testAdditionsAreRateLimited() throws {
        uids[":1.0"] = 0
        for index in 0..<16 {
            try call(
                ":1.0", MonitorContract.Targets.addTarget, interface: MonitorContract.Targets.interface,
                [.string("198.18.0.\(index + 10)")])
        }
        XCTAssertEqual(objects.targetPaths.count, 16)
        XCTAssertTrue(recorder.errors.isEmpty)
        try call(
            ":1.0", MonitorContract.Targets.removeTarget, interface: MonitorContract.Targets.interface,
            [.objectPath(MonitorContract.Targets.path(1))])
        try call(
            ":1.0", MonitorContract.Targets.addTarget, interface: MonitorContract.Targets.interface,
            [.string("198.18.0.99")])
        XCTAssertEqual(refusals(), 1, "a 17th addition within 10 s, removal or not")
        XCTAssertEqual(objects.targetPaths.count, 15)
    }
}
