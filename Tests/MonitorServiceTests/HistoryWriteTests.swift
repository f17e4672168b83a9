@testable import HelperProcess
import EventLoop
import Foundation
@testable import MonitorService
import MonitorRules
import Timekeeping
import XCTest

/// Issue 45 N24: every target's whole history was encoded on the loop and written every 10 s (8.3 MB a tick at 65
/// targets). A history is written when it changes: its time in state (a few hundred bytes) every tick, the whole
/// file only when the outages change; what is written is read back, the newer time in state with it.
final class HistoryWriteTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "netobserver-history-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A full history on disk: 1,000 outages with long Reasons, as the service writes it.
    func writeFullHistory(name: String) throws -> String {
        var text = "netobserver-history 1\nbegan 1000000\nspent full 5000000\nspent limited 2000000\n"
        let start = MonotonicClock.wallTime().microseconds - 86_400_000_000
        for index in 0..<OutageHistory.maximumOutages {
            text +=
                "outage \(start + UInt64(index) * 1_000_000) 5000000 upstream limited \(String(repeating: "r", count: 500))\n"
        }
        try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        return text
    }

    func testAKeptHistoryIsNotWrittenWholeUntilItsOutagesChange() throws {
        let whole = try writeFullHistory(name: "history.3")
        XCTAssertGreaterThan(whole.utf8.count, 500_000)
        let keeper = HistoryKeeper(
            file: AtomicFile(directory: directory, name: "history.3"), minimumOutage: .seconds(2))
        XCTAssertEqual(keeper.history.outages.count, OutageHistory.maximumOutages)
        var written = 0
        var names: Set<String> = []
        // An hour of ticks with no outage ending.
        for _ in 0..<360 {
            guard let (file, text, _) = keeper.due() else { continue }
            written += text.utf8.count
            names.insert(file.name)
        }
        XCTAssertEqual(names, ["history.3.time"], "only the time in state")
        XCTAssertLessThan(written, 360 * 300, "\(written) bytes in an hour of ticks")
        XCTAssertFalse(keeper.outagesDue)
    }

    func testTheNewerTimeInStateIsReadBackWithTheOutages() throws {
        _ = try writeFullHistory(name: "history")
        try "netobserver-history 1\nbegan 1000000\nspent full 9000000\nspent limited 1000000\nspent asleep 3000000\n"
            .write(toFile: directory + "/history.time", atomically: true, encoding: .utf8)
        let keeper = HistoryKeeper(file: AtomicFile(directory: directory, name: "history"), minimumOutage: .seconds(2))
        XCTAssertEqual(keeper.history.spent["full"], .seconds(9), "the newer value")
        XCTAssertEqual(keeper.history.spent["limited"], .seconds(2), "a value never shrinks")
        XCTAssertEqual(keeper.history.spent["asleep"], .seconds(3))
        XCTAssertEqual(keeper.history.outages.count, OutageHistory.maximumOutages)

        // Another history's time (another beginning) is not taken; a corrupt one is set aside.
        try "netobserver-history 1\nbegan 7\nspent full 99000000\n".write(
            toFile: directory + "/history.time", atomically: true, encoding: .utf8)
        XCTAssertEqual(
            HistoryKeeper(file: AtomicFile(directory: directory, name: "history"), minimumOutage: .seconds(2))
                .history.spent["full"], .seconds(5))
        try "netobserver-history 1\nbegan 1000000\noutage 1 2 - none x\n".write(
            toFile: directory + "/history.time", atomically: true,
            encoding: .utf8)
        _ = HistoryKeeper(file: AtomicFile(directory: directory, name: "history"), minimumOutage: .seconds(2))
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory + "/history.time.corrupt"))
    }

    func testAHistoryBegunAfreshIsWrittenWholeOnce() throws {
        let keeper = HistoryKeeper(
            file: AtomicFile(directory: directory, name: "history.9"), minimumOutage: .seconds(2))
        XCTAssertTrue(keeper.outagesDue, "no file holds its beginning yet")
        let first = try XCTUnwrap(keeper.due())
        XCTAssertEqual(first.file.name, "history.9")
        XCTAssertFalse(keeper.outagesDue)
        if let next = keeper.due() { XCTAssertEqual(next.file.name, "history.9.time") }
    }
}
