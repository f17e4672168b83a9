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

    /// Restored, reloaded and stored by one path, the default target as every other: the state file's values,
    /// but never over what its command line gave it.
    func testTheDefaultTargetIsRestoredReloadedAndStoredLikeEveryOther() throws {
        let recorder = try MessageRecorder()
        let server = ObjectServer(transport: recorder, machineID: "0123456789abcdef0123456789abcdef")
        var flags = MonitorSettings()
        try flags.set(.host, text: "198.18.0.1")
        let state = StoredState(
            targets: [
                0: [.host: "198.18.0.50", .interval: "250", .timeout: "not a number"],
                3: [.host: "198.18.0.3", .interval: "750"],
            ], nextTarget: 9)
        let objects = try ServiceObjects(
            server: server, settings: flags, budget: PendingBudget { _, answer in answer(0) }, state: state,
            flagged: [.host], makeEngines: nil)
        let targets = objects.targets
        XCTAssertEqual(targets.all.map(\.number), [0, 3])
        XCTAssertEqual(objects.model.settings.host, "198.18.0.1", "the command line's Host wins")
        XCTAssertEqual(objects.model.settings.interval, 250, "the file's Interval is taken")
        XCTAssertEqual(targets.all.last?.model.settings.interval, 750)
        XCTAssertEqual(objects.restoreProblems.count, 1, "\(objects.restoreProblems)")
        XCTAssertTrue(objects.restoreProblems.first?.hasSuffix(", ignored") == true)
        XCTAssertEqual(
            targets.stored,
            [0: [.host: "198.18.0.50", .interval: "250"], 3: [.host: "198.18.0.3", .interval: "750"]],
            "every target's values are stored one way; the flagged Host is kept for when the flag goes")
        XCTAssertEqual(targets.nextNumber, 9)

        let (changes, problems) = targets.reload(
            StoredState(targets: [0: [.host: "198.18.0.60", .interval: "1000"]], nextTarget: 9))
        XCTAssertEqual(changes, ["target 3 removed", "Interval=1000"])
        XCTAssertEqual(problems, [])
        XCTAssertEqual(objects.model.settings.host, "198.18.0.1", "flags still win on SIGHUP")
        XCTAssertEqual(targets.stored, [0: [.host: "198.18.0.60", .interval: "1000"]])
    }
}
