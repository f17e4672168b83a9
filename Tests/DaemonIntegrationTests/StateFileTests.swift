import Foundation
import IntegrationSupport
import MonitorContract
import XCTest

/// The state file under hostile or unlucky conditions: Sets answered once saved,
/// a save that fails, SIGHUP, and files that are not what they should be.
final class StateFileTests: BusTestCase {
    private func get(_ properties: P...) throws -> String {
        try busctl(["get-property", MonitorContract.busName, MonitorContract.objectPath, MonitorContract.interface] + properties.map(\.name)).stdout
    }

    func testASetIsAnsweredOnceItsValueIsSaved() throws {
        let state = bus.directory + "/kept"
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        for interval in 1_001...1_020 {
            XCTAssertEqual(try set(.interval, String(interval)).status, 0)
            let saved = try String(contentsOfFile: state + "/settings", encoding: .utf8)
            XCTAssertTrue(saved.contains("\(P.interval)=\(interval)\n"), "on disk when the Set returned: \(saved)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0 != "settings" }
        XCTAssertEqual(leftovers, [], "no temporary files left")
        daemon.stop()
    }

    func testASetThatCannotBeSavedFailsButTakesEffect() throws {
        // A regular file where the state directory should be: mkdir fails, even for root.
        let blocker = bus.directory + "/blocker"
        XCTAssertTrue(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
        let daemon = try DaemonProcess(bus: bus, stateDirectory: blocker + "/state")
        let out = try set(.interval, "2500")
        XCTAssertNotEqual(out.status, 0, "the caller learns the value was not saved")
        XCTAssertTrue(out.stderr.contains("\(P.interval) is in effect until the service stops, but could not be saved"), out.stderr)
        XCTAssertEqual(try get(.interval), "u 2500\n", "in effect for this run")
        XCTAssertTrue(daemon.log.contains("cannot save settings"), daemon.log)
        XCTAssertTrue(daemon.process.isRunning)
        daemon.stop()
    }

    func testSighupRereadsTheStateFileAndFlagsStillWin() throws {
        let state = bus.directory + "/hup"
        let daemon = try DaemonProcess(bus: bus, arguments: ["--timeout", "700"], stateDirectory: state)
        XCTAssertEqual(try set(.failureThreshold, "3").status, 0)
        try "\(P.interval)=250\nTimeout=300\nFailureThreshold=4\n".write(toFile: state + "/settings", atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntil("SIGHUP: re-read")
        XCTAssertTrue(daemon.process.isRunning, "SIGHUP never stops the service")
        XCTAssertEqual(try get(.interval, .timeout, .failureThreshold), "u 250\nu 700\nu 4\n", "the file, except what a flag says")
        XCTAssertTrue(daemon.log.contains("SIGHUP: re-read \(state)/settings: \(P.interval)=250, \(P.failureThreshold)=4"), daemon.log)
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntil("nothing changed")
        XCTAssertTrue(daemon.process.isRunning)
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
    }

    func testAStateFileThatIsALinkAFIFOOrHugeIsRefusedAtOnce() throws {
        let cases: [(String, (String) throws -> Void)] = [
            ("is a symbolic link", { try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: "/dev/zero") }),
            ("is not a regular file", { XCTAssertEqual(mkfifo($0, 0o644), 0) }),
            ("is larger than 64 KiB", { try Data(repeating: 0x41, count: 100_000).write(to: URL(fileURLWithPath: $0)) }),
        ]
        for (index, (message, make)) in cases.enumerated() {
            let state = bus.directory + "/odd-\(index)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            try make(state + "/settings")
            let started = Date()
            let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
            XCTAssertTrue(daemon.log.contains("\(state)/settings: \(message), ignoring it"), daemon.log)
            XCTAssertEqual(try get(.interval), "u 1000\n")
            print("state file that \(message): serving after \(String(format: "%.2f", Date().timeIntervalSince(started))) s")
            daemon.stop()
        }
    }
}
