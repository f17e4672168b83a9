import DBusKit
import EventLoop
import MonitorContract
@testable import MonitorService
import XCTest

/// No target is special: the default one is a member of the one set like the others, held in
/// the order of its number; what sets it apart is a check in `remove`, not a structure of its own.
final class TargetSetTests: XCTestCase {
    func testTheDefaultTargetIsOneOfTheSet() throws {
        let recorder = try MessageRecorder()
        let server = ObjectServer(transport: recorder, machineID: "0123456789abcdef0123456789abcdef")
        let objects = ServiceObjects.withoutEngines(server: server, budget: PendingBudget { _, answer in answer(0) })
        let model = objects.model
        let first = try XCTUnwrap(objects.addTarget(host: "198.18.0.1"))
        _ = try XCTUnwrap(objects.addTarget(host: "198.18.0.2"))
        let targets = objects.targets

        XCTAssertEqual(targets.all.map(\.number), [0, 1, 2])
        XCTAssertTrue(targets.defaultTarget === targets.all.first)
        XCTAssertTrue(targets.defaultTarget?.model === model)
        XCTAssertEqual(
            targets.all.map(\.lookupsFirst), [true, false, false], "lookup priority is the default's attribute")
        XCTAssertThrowsError(try targets.add(settings: MonitorSettings(), number: 0, persisted: [:]), "one target 0") {
            error in
            XCTAssertEqual((error as? DBusError)?.name, DBusError.invalidArgs("").name)
        }
        XCTAssertEqual(targets.all.count, 3)
        XCTAssertEqual(targets.paths, [first, MonitorContract.Targets.path(2)], "Targets lists the added ones")

        XCTAssertThrowsError(try targets.remove(path: MonitorContract.objectPath)) { error in
            XCTAssertEqual((error as? DBusError)?.name, DBusError.invalidArgs("").name)
        }
        XCTAssertEqual(targets.all.count, 3)
        try targets.remove(path: first)
        XCTAssertEqual(targets.all.map(\.number), [0, 2])
        XCTAssertThrowsError(try targets.remove(path: first), "removed once")
    }
}
