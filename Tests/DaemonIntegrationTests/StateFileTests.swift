import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// The state file under hostile or unlucky conditions: Sets answered once saved,
/// a save that fails, SIGHUP, and files that are not what they should be.
final class StateFileTests: BusTestCase {
    private func get(_ properties: P...) throws -> String {
        try busctl(
            ["get-property", MonitorContract.busName, MonitorContract.objectPath, MonitorContract.interface]
                + properties.map(\.name)
        ).stdout
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
        XCTAssertTrue(
            out.stderr.contains("\(P.interval) is in effect until the service stops, but could not be saved"),
            out.stderr)
        XCTAssertEqual(try get(.interval), "u 2500\n", "in effect for this run")
        XCTAssertTrue(daemon.log.contains("cannot save settings"), daemon.log)
        XCTAssertTrue(daemon.process.isRunning)
        daemon.stop()
    }

    func testSighupRereadsTheStateFileAndFlagsStillWin() throws {
        let state = bus.directory + "/hup"
        let daemon = try DaemonProcess(bus: bus, arguments: ["--timeout", "700"], stateDirectory: state)
        XCTAssertEqual(try set(.failureThreshold, "3").status, 0)
        try "\(P.interval)=250\nTimeout=300\nFailureThreshold=4\n".write(
            toFile: state + "/settings", atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntil("SIGHUP: re-read")
        XCTAssertTrue(daemon.process.isRunning, "SIGHUP never stops the service")
        XCTAssertEqual(
            try get(.interval, .timeout, .failureThreshold), "u 250\nu 700\nu 4\n", "the file, except what a flag says")
        XCTAssertTrue(
            daemon.log.contains("SIGHUP: re-read \(state)/settings: \(P.interval)=250, \(P.failureThreshold)=4"),
            daemon.log)
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntil("nothing changed")
        XCTAssertTrue(daemon.process.isRunning)
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
    }

    func testAStateFileThatIsALinkAFIFOOrHugeIsSetAsideNeverOverwritten() throws {
        let huge = Data(repeating: 0x41, count: 300_000)
        let cases: [(String, (String) throws -> Void)] = [
            (
                "is a symbolic link",
                { try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: "/dev/zero") }
            ),
            ("is not a regular file", { XCTAssertEqual(mkfifo($0, 0o644), 0) }),
            ("is larger than 256 KiB", { try huge.write(to: URL(fileURLWithPath: $0)) }),
        ]
        for (index, (message, make)) in cases.enumerated() {
            let state = bus.directory + "/odd-\(index)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            try make(state + "/settings")
            let started = Date()
            let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
            XCTAssertTrue(
                daemon.log.contains(
                    "\(state)/settings: \(message): set aside as \(state)/settings.corrupt; starting from the defaults"),
                daemon.log)
            XCTAssertEqual(try get(.interval), "u 1000\n")
            print(
                "state file that \(message): serving after \(String(format: "%.2f", Date().timeIntervalSince(started))) s"
            )
            // A Set writes a new file; what could not be read stays as it was, beside it.
            XCTAssertEqual(try set(.interval, "1500").status, 0)
            XCTAssertTrue(try String(contentsOfFile: state + "/settings", encoding: .utf8).contains("Interval=1500\n"))
            if message.hasPrefix("is larger") {
                XCTAssertEqual(
                    FileManager.default.contents(atPath: state + "/settings.corrupt"), huge,
                    "the refused file is kept whole")
            } else {
                XCTAssertNotNil(
                    try? FileManager.default.attributesOfItem(atPath: state + "/settings.corrupt"), "set aside")
            }
            daemon.stop()
        }
    }

    /// Issue 45 N23: 64 targets with long check URLs make a file of some 135 KB, which the service refused to read
    /// back, dropping every target and setting at the next start. Everything it writes it reads.
    func testSixtyFourTargetsWithTheLongestURLsComeBackAfterARestart() throws {
        let state = bus.directory + "/many"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        func url(_ scheme: String, _ number: Int) -> String {
            let head = "\(scheme)://target-\(number).test/"
            return head + String(repeating: "p", count: 1024 - head.utf8.count)
        }
        var text = "CheckURL=\(url("http", 0))\nSecureCheckURL=\(url("https", 0))\nNextTarget=65\n"
        for number in 1...64 {
            text += "Target.\(number).Host=host-\(number).test\nTarget.\(number).CheckURL=\(url("http", number))\n"
            text += "Target.\(number).SecureCheckURL=\(url("https", number))\nTarget.\(number).Interval=3600000\n"
        }
        XCTAssertGreaterThan(text.utf8.count, 130_000)
        try text.write(toFile: state + "/settings", atomically: true, encoding: .utf8)
        var daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        func targets() throws -> Int {
            let out = try busctl([
                "get-property", MonitorContract.busName, MonitorContract.objectPath, MonitorContract.Targets.interface,
                MonitorContract.Targets.targetsProperty,
            ]).stdout
            return Int(out.split(separator: " ").dropFirst().first ?? "") ?? -1
        }
        XCTAssertEqual(try targets(), 64, daemon.log)
        // The service writes it again (a Set), and reads what it wrote at the next start.
        XCTAssertEqual(try set(.interval, "2000").status, 0)
        let written = try String(contentsOfFile: state + "/settings", encoding: .utf8)
        XCTAssertGreaterThan(written.utf8.count, 130_000)
        daemon.stop()
        daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        XCTAssertEqual(try targets(), 64, daemon.log)
        XCTAssertEqual(try get(.interval), "u 2000\n")
        let last = try busctl([
            "get-property", MonitorContract.busName, MonitorContract.Targets.path(64), MonitorContract.interface,
            P.secureCheckURL.name,
        ]).stdout
        XCTAssertEqual(last, "s \"\(url("https", 64))\"\n")
        XCTAssertFalse(daemon.log.contains("ignoring"), daemon.log)
        daemon.stop()
    }

    /// Issue 45 N24: a target number whose history is on disk is never given again, even when the file that
    /// counted the numbers was lost, so no new target inherits an old one's history.
    func testANumberWithAHistoryOnDiskIsNeverGivenAgain() throws {
        let state = bus.directory + "/numbers"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try "netobserver-history 1\nbegan 1\n".write(toFile: state + "/history.7", atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        let out = try busctl([
            "call", MonitorContract.busName, MonitorContract.objectPath, MonitorContract.Targets.interface,
            MonitorContract.Targets.addTarget, "s", "fresh.test",
        ])
        XCTAssertEqual(out.stdout, "o \"\(MonitorContract.Targets.path(8))\"\n", out.stderr)
        daemon.stop()
    }

    /// SIGHUP with a file that cannot be read: the running settings stay (never taken as an empty file), the file
    /// is set aside, and the running settings are saved afresh.
    func testSighupWithAFileItCannotReadKeepsTheRunningSettings() throws {
        let state = bus.directory + "/hup-refused"
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        XCTAssertEqual(try set(.failureThreshold, "5").status, 0)
        try Data(repeating: 0x42, count: 300_000).write(to: URL(fileURLWithPath: state + "/settings"))
        kill(daemon.pid, SIGHUP)
        try daemon.waitUntil("the running settings stay")
        XCTAssertEqual(try get(.failureThreshold), "u 5\n")
        XCTAssertEqual(FileManager.default.contents(atPath: state + "/settings.corrupt")?.count, 300_000)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline,
            (try? String(contentsOfFile: state + "/settings", encoding: .utf8))?.contains("FailureThreshold=5") != true
        {
            usleep(20_000)
        }
        XCTAssertTrue(try String(contentsOfFile: state + "/settings", encoding: .utf8).contains("FailureThreshold=5\n"))
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
    }

    /// Issue 54 item 7: a state file that became unreadable while the service ran (a link, a FIFO, a file the service's
    /// user may not open) was written over at the next Set. It is set aside first, as at start-up.
    func testAFileThatCannotBeReadIsSetAsideBeforeASave() throws {
        let state = bus.directory + "/runtime-refused"
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        XCTAssertEqual(try set(.failureThreshold, "4").status, 0)
        let elsewhere = bus.directory + "/elsewhere"
        try Data("Interval=1234\n".utf8).write(to: URL(fileURLWithPath: elsewhere))
        try FileManager.default.removeItem(atPath: state + "/settings")
        try FileManager.default.createSymbolicLink(atPath: state + "/settings", withDestinationPath: elsewhere)
        XCTAssertEqual(try set(.failureThreshold, "5").status, 0)
        let aside = try FileManager.default.destinationOfSymbolicLink(atPath: state + "/settings.corrupt")
        XCTAssertEqual(aside, elsewhere, "the link is set aside, not written over")
        XCTAssertEqual(try String(contentsOfFile: elsewhere, encoding: .utf8), "Interval=1234\n", "nor what it names")
        XCTAssertTrue(try String(contentsOfFile: state + "/settings", encoding: .utf8).contains("FailureThreshold=5\n"))

        try FileManager.default.removeItem(atPath: state + "/settings")
        XCTAssertEqual(mkfifo(state + "/settings", 0o644), 0)
        XCTAssertEqual(try set(.failureThreshold, "6").status, 0)
        var aside2 = stat()
        XCTAssertEqual(lstat(state + "/settings.corrupt", &aside2), 0)
        XCTAssertEqual(aside2.st_mode & S_IFMT, S_IFIFO, "the FIFO is set aside")
        XCTAssertTrue(try String(contentsOfFile: state + "/settings", encoding: .utf8).contains("FailureThreshold=6\n"))
        daemon.stop()
    }
}
