import Foundation
import IntegrationSupport
import MonitorContract
import XCTest

/// Start, name ownership, replacement, signals, a lost bus, usage errors, and settings kept across restarts.
final class LifecycleTests: BusTestCase {

    private func nameHasOwner() throws -> Bool {
        let out = try runCommand([
            "busctl", "--address=\(bus.address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus", "NameHasOwner", "s", MonitorContract.busName,
        ])
        return out.stdout == "b true\n"
    }

    func testSecondInstanceExitsOneWithAMessage() throws {
        let first = try DaemonProcess(bus: bus)
        let second = try DaemonProcess(bus: bus, waitForName: false)
        XCTAssertEqual(second.waitForExit(), 1)
        XCTAssertTrue(
            second.log.contains("org.netobserver.Monitor is already owned by another instance (use --replace"),
            second.log)
        XCTAssertTrue(first.process.isRunning)
        first.stop()
    }

    func testReplaceTakesTheNameAndTheOldInstanceExitsZero() throws {
        let first = try DaemonProcess(bus: bus)
        let second = try DaemonProcess(bus: bus, arguments: ["--replace"])
        XCTAssertEqual(first.waitForExit(), 0)
        XCTAssertTrue(first.log.contains("another instance took over"), first.log)
        XCTAssertTrue(second.process.isRunning)
        XCTAssertTrue(try nameHasOwner())
        second.stop()
    }

    func testSigtermAndSigintReleaseTheNameAndExitZero() throws {
        for signal in [SIGTERM, SIGINT] {
            let daemon = try DaemonProcess(bus: bus)
            XCTAssertTrue(try nameHasOwner())
            kill(daemon.pid, signal)
            XCTAssertEqual(daemon.waitForExit(), 0)
            XCTAssertFalse(try nameHasOwner())
        }
    }

    func testLosingTheBusExitsNonZeroWithoutSpinning() throws {
        let daemon = try DaemonProcess(bus: bus)
        let cpuBefore = daemon.cpuSeconds
        let killed = Date()
        kill(bus.pid, SIGKILL)
        let status = daemon.waitForExit(timeout: 3)
        let elapsed = Date().timeIntervalSince(killed)
        XCTAssertNotNil(status, "still running 3 s after the bus died")
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(daemon.log.contains("lost the connection to the bus"), daemon.log)
        print("bus killed: daemon exited \(status ?? -1) after \(String(format: "%.3f", elapsed)) s")
        _ = cpuBefore
    }

    func testServesWhereEpollPwait2IsMissingOrForbidden() throws {
        for error in ["ENOSYS", "EPERM"] {
            let daemon = try DaemonProcess(
                bus: bus, launcher: [Paths.python, Paths.clients + "/forbid_syscall.py", "epoll_pwait2", error])
            XCTAssertTrue(daemon.log.contains("waiting with epoll_pwait"), daemon.log)
            let started = Date()
            let wait = try runCommand([
                "busctl", "--address=\(bus.address)", "call", MonitorContract.busName, MonitorContract.objectPath,
                MonitorContract.interface, MonitorContract.Method.wait.name, "u", "300",
            ])
            XCTAssertEqual(wait.stdout, "b false\n", "\(error): a timer on the fallback wait: \(wait.stderr)")
            XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.3)
            XCTAssertEqual(
                try runCommand([
                    "busctl", "--address=\(bus.address)", "call", MonitorContract.busName, MonitorContract.objectPath,
                    MonitorContract.interface, MonitorContract.Method.check.name,
                ]).stdout, "s \"none\"\n")
            daemon.stop()
            XCTAssertEqual(daemon.waitForExit(), 0, "\(error): \(daemon.log)")
        }
    }

    func testIdleDaemonUsesNoCPU() throws {
        let daemon = try DaemonProcess(bus: bus)
        let before = daemon.cpuSeconds
        sleep(2)
        let used = daemon.cpuSeconds - before
        XCTAssertLessThan(used, 0.05, "idle for 2 s used \(used) s of CPU")
        daemon.stop()
    }

    func testCannotReachTheBusExitsOne() throws {
        let out = try runCommand([Paths.daemon, "--address", "unix:path=/nonexistent/bus"])
        XCTAssertEqual(out.status, 1)
        XCTAssertTrue(out.stderr.contains("cannot connect to the bus"), out.stderr)
    }

    func testUsageErrorsExitTwo() throws {
        for (arguments, message) in [
            (["--interval", "5"], "--interval: 5 is out of range (accepted: 100–3600000 ms)"),
            (["--failures", "0"], "--failures: 0 is out of range (accepted: 1–100)"),
            (["--family", "ipx"], "--family: 'ipx' is not valid"),
            (["--frobnicate"], "unknown option '--frobnicate'"),
        ] {
            let out = try runCommand([Paths.daemon] + arguments)
            XCTAssertEqual(out.status, 2, "\(arguments)")
            XCTAssertTrue(out.stderr.contains(message), out.stderr)
        }
        let help = try runCommand([Paths.daemon, "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("Usage: netobserverd"))
        let version = try runCommand([Paths.daemon, "--version"])
        XCTAssertEqual(version.status, 0)
        XCTAssertTrue(version.stdout.hasPrefix("netobserverd "))
    }

    func testSetValuesSurviveARestartAndFlagsWin() throws {
        let state = bus.directory + "/kept"
        var daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        let set = { (property: P, value: String) throws -> Void in
            let out = try runCommand([
                "busctl", "--address=\(self.bus.address)", "set-property", MonitorContract.busName,
                MonitorContract.objectPath, MonitorContract.interface, property.name,
                property.type.signature, value,
            ])
            XCTAssertEqual(out.status, 0, out.stderr)
        }
        let get = { (property: P) throws -> String in
            try runCommand([
                "busctl", "--address=\(self.bus.address)", "get-property", MonitorContract.busName,
                MonitorContract.objectPath, MonitorContract.interface, property.name,
            ]).stdout
        }
        try set(.interval, "4321")
        try set(.addressFamily, "ipv4")
        try set(.secureCheckURL, "https://198.18.2.2/generate_204")
        try set(.checkEcho, "true")
        daemon.stop()
        // DaemonProcess always passes --host 198.18.0.1, so Host comes from the flag here.
        daemon = try DaemonProcess(bus: bus, arguments: ["--family", "ipv6"], stateDirectory: state)
        XCTAssertEqual(try get(.interval), "u 4321\n", "restored from the state file")
        XCTAssertEqual(try get(.addressFamily), "s \"ipv6\"\n", "the flag wins over the state file")
        XCTAssertEqual(try get(.secureCheckURL), "s \"https://198.18.2.2/generate_204\"\n")
        XCTAssertEqual(try get(.checkEcho), "b true\n")
        daemon.stop()
        let saved = try String(contentsOfFile: state + "/settings", encoding: .utf8)
        XCTAssertTrue(saved.contains("\(P.interval)=4321\n") && saved.contains("\(P.addressFamily)=ipv4\n"), saved)
        XCTAssertFalse(saved.contains("\(P.host)="), "flags are not persisted")
    }

    func testCorruptStateFileIsSurvived() throws {
        let state = bus.directory + "/corrupt"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Data([0xFF, 0xFE, 0x00, 0x0A] + Array("\(P.interval)=99\nTimeout=250\njunk\n".utf8)).write(
            to: URL(fileURLWithPath: state + "/settings"))
        let daemon = try DaemonProcess(bus: bus, stateDirectory: state)
        let get = try runCommand([
            "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName,
            MonitorContract.objectPath, MonitorContract.interface, P.interval.name, P.timeout.name,
        ])
        XCTAssertEqual(get.stdout, "u 1000\nu 250\n", "bad values ignored, good ones kept")
        XCTAssertTrue(daemon.log.contains("\(P.interval): 99 is out of range"), daemon.log)
        XCTAssertTrue(daemon.log.contains("not a setting, ignored"), daemon.log)
        daemon.stop()
    }

    func testClientWithoutADaemon() throws {
        for command in [
            ["status"], ["status", "--json"], ["check"], ["wait", "--timeout", "1"], ["set", "host", "x.test"],
        ] {
            let out = try runCommand([Paths.client, "--address", bus.address] + command)
            XCTAssertEqual(out.status, 1, "\(command)")
            XCTAssertTrue(out.stderr.contains("netobserverd is not running on the bus at"), out.stderr)
        }
        let monitor = try runCommand([Paths.client, "--address", bus.address, "monitor"])
        XCTAssertEqual(monitor.status, 1)
        for usage in [["frobnicate"], [], ["status", "--xml"], ["wait", "--timeout", "x"], ["set", "host"]] {
            XCTAssertEqual(try runCommand([Paths.client, "--address", bus.address] + usage).status, 2, "\(usage)")
        }
        XCTAssertEqual(try runCommand([Paths.client, "--help"]).status, 0)
    }

    func testReadyAndWatchdogReachTheNotifySocket() throws {
        let path = bus.directory + "/notify"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        XCTAssertEqual(bound, 0)
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let daemon = try DaemonProcess(bus: bus, environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"])
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(1.0)
        var buffer = [UInt8](repeating: 0, count: 512)
        while Date() < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { messages.append(String(decoding: buffer[..<count], as: UTF8.self)) }
        }
        daemon.stop()
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            messages.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
        XCTAssertTrue(messages.first?.hasPrefix("READY=1") ?? false, "\(messages)")
        let keepAlives = messages.filter { $0 == "WATCHDOG=1" }.count
        XCTAssertGreaterThanOrEqual(keepAlives, 5, "every 100 ms for about a second: \(messages)")
        XCTAssertEqual(messages.last, "STOPPING=1")
    }
}
