import Foundation
import IntegrationSupport
import MonitorContract
import XCTest

/// The daemon's blocking work (lookups, census walks, files) runs in a helper process, so the daemon
/// itself stays single-threaded; a helper that dies fails what it held at once and is replaced.
final class BlockingHelperTests: BusTestCase {
    private func threads(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
    }

    private func commandLine(_ pid: Int32) -> String {
        let raw = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        return String(decoding: raw.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }

    /// What each descriptor above 2 of `pid` refers to (`socket:[inode]`, a path, …).
    private func openFiles(_ pid: Int32) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        // An eventfd's name says nothing of which one it is.
        return names.compactMap(Int.init).filter { $0 > 2 }.compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
        }.filter { !$0.hasPrefix("anon_inode:") }
    }

    private func waitForNewHelper(of daemon: DaemonProcess, other: Int32?) -> Int32? {
        for _ in 0..<200 {
            if let pid = daemon.helperPIDs.first, pid != other { return pid }
            usleep(10_000)
        }
        return nil
    }

    func testTheDaemonStartsNoThreadAndItsHelperDoesTheBlockingWork() throws {
        let state = bus.directory + "/kept"
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        // A name from the hosts file, a save and a history: each is the helper's work.
        XCTAssertEqual(try set(.host, "localhost").status, 0)
        XCTAssertNotNil(try waitForProperty(.address, "127.0.0.1", bus: bus, timeout: 10), daemon.log)
        XCTAssertTrue(try String(contentsOfFile: state + "/settings", encoding: .utf8).contains("Host=localhost\n"))
        guard let helper = waitForNewHelper(of: daemon, other: nil) else {
            return XCTFail("no blocking helper: \(daemon.log)")
        }
        XCTAssertEqual(daemon.helperPIDs, [helper], "one helper")
        XCTAssertTrue(commandLine(helper).contains("--blocking-helper"), commandLine(helper))
        XCTAssertEqual(threads(daemon.pid), 1, "the daemon itself never starts a thread")
        let status = (try? String(contentsOfFile: "/proc/\(helper)/status", encoding: .utf8)) ?? ""
        XCTAssertTrue(status.contains("CapEff:\t0000000000000000\n"), "the helper holds no capability: \(status)")
        XCTAssertTrue(status.contains("CapPrm:\t0000000000000000\n"), status)
        XCTAssertTrue(status.contains("NoNewPrivs:\t1\n"), status)
        // No descriptor of the daemon's lives on in it (beyond the standard three): only its socket and its own.
        let shared = Set(openFiles(helper)).intersection(openFiles(daemon.pid))
        XCTAssertEqual(shared, [], "open in both the daemon and its helper")
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
        // The helper reads the daemon's end closing (or is killed with its parent).
        XCTAssertTrue(waitUntilGone(helper), "the helper outlived the daemon")
    }

    /// systemd stops a service by signalling every process of its cgroup at once: the helper outlives the
    /// signal, so the daemon's last history still reaches the disk, and it ends when the daemon does.
    func testAStopSignalledToTheWholeServiceStillWritesTheLastHistory() throws {
        let state = bus.directory + "/kept"
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        XCTAssertEqual(try set(.host, "localhost").status, 0)
        guard let helper = waitForNewHelper(of: daemon, other: nil) else {
            return XCTFail("no blocking helper: \(daemon.log)")
        }
        // More than a second after start, so the history's text (its time in state) has changed since any write.
        usleep(1_200_000)
        let stopped = Date()
        kill(helper, SIGTERM)
        kill(daemon.pid, SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 0, daemon.log)
        XCTAssertFalse(daemon.log.contains("blocking helper (PID"), daemon.log)
        let written = try FileManager.default.attributesOfItem(atPath: state + "/history")[.modificationDate] as? Date
        XCTAssertGreaterThanOrEqual(
            written?.timeIntervalSince(stopped) ?? -1, -0.05,
            "the history was written at the stop: \(daemon.log)")
        XCTAssertTrue(waitUntilGone(helper), "the helper outlived the daemon")
    }

    /// A terminal's Ctrl-C (or Ctrl-\) reaches the whole job, and `systemctl kill -s HUP` the whole cgroup: those are
    /// the daemon's to act on, and the helper goes on.
    func testTheHelperLeavesAJobsSignalsToTheDaemon() throws {
        let daemon = try DaemonProcess(bus: bus)
        XCTAssertEqual(try set(.host, "localhost").status, 0)
        guard let helper = waitForNewHelper(of: daemon, other: nil) else {
            return XCTFail("no blocking helper: \(daemon.log)")
        }
        for signal in [SIGINT, SIGHUP, SIGQUIT] { kill(helper, signal) }
        usleep(200_000)
        XCTAssertEqual(daemon.helperPIDs, [helper], daemon.log)
        XCTAssertEqual(try set(.host, "127.0.0.1").status, 0, daemon.log)
        XCTAssertFalse(daemon.log.contains("blocking helper (PID"), daemon.log)
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
        XCTAssertTrue(waitUntilGone(helper), "the helper outlived the daemon")
    }

    private func waitUntilGone(_ pid: Int32) -> Bool {
        for _ in 0..<200 {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            if status.isEmpty || status.contains(") Z ") { return true }
            usleep(10_000)
        }
        return false
    }

    func testTheHelperWorksWhereDroppingCapabilitiesIsForbidden() throws {
        // As under the unit's SystemCallFilter=~@privileged: capset fails with EPERM, in the daemon and its helper.
        let daemon = try DaemonProcess(
            bus: bus, launcher: [Paths.python, Paths.clients + "/forbid_syscall.py", "capset", "EPERM"])
        XCTAssertEqual(try set(.host, "localhost").status, 0)
        XCTAssertNotNil(try waitForProperty(.address, "127.0.0.1", bus: bus, timeout: 10), daemon.log)
        XCTAssertFalse(daemon.log.contains("blocking helper"), daemon.log)
        XCTAssertEqual(daemon.helperPIDs.count, 1)
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
    }

    func testAHelperThatDiesFailsWhatItHeldAndIsReplaced() throws {
        let state = bus.directory + "/kept"
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        XCTAssertEqual(try set(.interval, "1500").status, 0)
        guard let first = waitForNewHelper(of: daemon, other: nil) else {
            return XCTFail("no blocking helper: \(daemon.log)")
        }
        // Stopped, the helper holds the next save: the Set waits for it.
        kill(first, SIGSTOP)
        let waiting = Process()
        waiting.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        waiting.arguments = [
            "--address=\(bus.address)", "set-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.interface, P.interval.name, P.interval.type.signature, "1600",
        ]
        let errors = Pipe()
        waiting.standardError = errors
        try waiting.run()
        usleep(500_000)
        XCTAssertTrue(waiting.isRunning, "the Set waits for its save")
        kill(first, SIGKILL)
        waiting.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertNotEqual(waiting.terminationStatus, 0, "the save the helper held failed at once")
        XCTAssertTrue(message.contains("could not be saved"), message)
        try daemon.waitUntil("the blocking helper (PID \(first)) stopped")
        // The next request starts another helper (at most one start a second), and the work goes on.
        usleep(1_100_000)
        XCTAssertEqual(try set(.interval, "1700").status, 0, daemon.log)
        XCTAssertTrue(try String(contentsOfFile: state + "/settings", encoding: .utf8).contains("Interval=1700\n"))
        guard let second = waitForNewHelper(of: daemon, other: first) else {
            return XCTFail("no new helper: \(daemon.log)")
        }
        XCTAssertNotEqual(second, first)
        XCTAssertEqual(threads(daemon.pid), 1)
        XCTAssertTrue(daemon.process.isRunning)
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
    }
}
