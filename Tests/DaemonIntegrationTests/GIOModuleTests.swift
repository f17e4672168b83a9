import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import MonitorRules
import XCTest

/// The GIO module in a GLib program (python3-gi, GIO_EXTRA_MODULES from the build), with the
/// test's bus as its system bus: when it declines, how it follows the service's coming and going,
/// and that nobody but the service is believed. No root: the daemon probes loopback.
final class GIOModuleTests: XCTestCase {
    var bus: PrivateBus!
    var daemon: DaemonProcess?
    var programs: [JSONLineProgram] = []

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: Paths.gioModules + "/libgionetobserver.so") else {
            XCTFail("the GIO module is not built: `make gio-module` (make test builds it)")
            return
        }
    }

    override func tearDown() {
        for program in programs { program.stop() }
        daemon?.stop()
        bus?.stop()
    }

    func startGLibProgram() throws -> JSONLineProgram {
        let program = try JSONLineProgram(
            [Paths.python, Paths.namespaceHelpers + "/glib_monitor.py"],
            environment: ["GIO_EXTRA_MODULES": Paths.gioModules, "DBUS_SYSTEM_BUS_ADDRESS": bus.address],
            directory: bus.directory)
        programs.append(program)
        guard program.waitFor(10, { $0["kind"] as? String == "start" }) != nil else {
            throw NSError(domain: "glib_monitor.py did not start: \(program.text)", code: 1)
        }
        return program
    }

    func waitForConnectivity(_ expected: String) throws {
        if try waitForProperty(.connectivity, expected, bus: bus, timeout: 10) == nil {
            XCTFail(
                "Connectivity did not become \(expected): \(try readProperty(.connectivity, bus: bus))\n\(daemon?.log ?? "")"
            )
        }
    }

    func lastChange(
        _ program: JSONLineProgram, toward connectivity: String, available: Bool,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let seen = program.waitFor {
            $0["kind"] as? String == "changed" && $0["connectivity"] as? String == connectivity
                && $0["available"] as? Bool == available
        }
        XCTAssertNotNil(seen, "not told \(connectivity)/\(available):\n\(program.text)", file: file, line: line)
    }

    /// Nobody owns the name: GLib uses its next monitor, and the module has not asked the bus to start the service.
    func testWithoutTheServiceGLibUsesItsNextMonitorAndNothingIsStarted() throws {
        let services = FileManager.default.temporaryDirectory.appendingPathComponent("gio-services-\(getpid())").path
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: services) }
        let marker = services + "/started"
        try "[D-BUS Service]\nName=\(MonitorContract.busName)\nExec=/usr/bin/touch \(marker)\n"
            .write(toFile: services + "/\(MonitorContract.busName).service", atomically: true, encoding: .utf8)
        bus = try PrivateBus(serviceDirectory: services)

        let glib = try startGLibProgram()
        XCTAssertNotEqual(glib.events.first?["type"] as? String, "NetobserverNetworkMonitor", glib.text)
        XCTAssertEqual(glib.events.first?["type"] as? String, "GNetworkMonitorNetlink", glib.text)
        glib.send("state")
        XCTAssertNotNil(glib.waitFor { $0["kind"] as? String == "state" })
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "the module asked the bus to start the service")
        // The activation file works: a call that may auto-start does start it.
        _ = try runCommand([
            "busctl", "--address=\(bus.address)", "--auto-start=yes", "--timeout=2", "call",
            MonitorContract.busName, MonitorContract.objectPath, "org.freedesktop.DBus.Peer", "Ping",
        ])
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: marker) { usleep(10_000) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "the activation file did not start anything")
    }

    /// Away: GLib's old default (available, full, not metered); back: the service's values again.
    func testTheServiceLeavingAndComingBack() throws {
        bus = try PrivateBus()
        daemon = try DaemonProcess(bus: bus, host: "198.18.0.1") // a namespace with only loopback: no route
        try waitForConnectivity("none")
        let glib = try startGLibProgram()
        XCTAssertEqual(glib.events.first?["type"] as? String, "NetobserverNetworkMonitor", glib.text)
        XCTAssertEqual(glib.events.first?["connectivity"] as? String, "local")
        XCTAssertEqual(glib.events.first?["available"] as? Bool, false)

        daemon?.stop()
        lastChange(glib, toward: "full", available: true)
        let afterLeaving = glib.events.count
        daemon = try DaemonProcess(bus: bus, host: "198.18.0.1")
        try waitForConnectivity("none")
        XCTAssertNotNil(
            glib.waitFor(skipping: afterLeaving) {
                $0["kind"] as? String == "changed" && $0["connectivity"] as? String == "local"
                    && $0["available"] as? Bool == false
            }, glib.text)
        // Then it follows the new owner's changes.
        _ = try runCommand([
            "busctl", "--address=\(bus.address)", "set-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.interface, "Host", "s", "127.0.0.1",
        ])
        try waitForConnectivity("full")
        lastChange(glib, toward: "full", available: true)
        XCTAssertEqual(glib.events.filter { $0["kind"] as? String == "changed" }.count, 3, glib.text)
    }

    /// The service restarts and the module's first read of it fails, or takes over 5 s: what the new owner says in
    /// its signals is believed meanwhile, and the read is tried again until it works. (The module used to ignore every
    /// later PropertiesChanged: GLib programs said FULL until the owner changed again.)
    func testTheModuleRecoversFromAReadThatFailsAfterARestart() throws {
        for mode in ["fail", "hang"] {
            bus = try PrivateBus()
            daemon = try DaemonProcess(bus: bus, host: "127.0.0.1")
            try waitForConnectivity("full")
            let glib = try startGLibProgram()
            XCTAssertEqual(glib.events.first?["type"] as? String, "NetobserverNetworkMonitor", glib.text)
            daemon?.stop()
            daemon = nil
            let flaky = Process()
            flaky.executableURL = URL(fileURLWithPath: Paths.python)
            flaky.arguments = [Paths.clients + "/flaky_service.py", bus.address, mode]
            let output = Pipe()
            flaky.standardOutput = output
            try flaky.run()
            defer { flaky.terminate(); flaky.waitUntilExit() }
            _ = output.fileHandleForReading.availableData // "ready": it owns the name
            XCTAssertNotNil(
                glib.waitFor(5) { $0["kind"] as? String == "changed" && $0["connectivity"] as? String == "portal" },
                "\(mode): the new owner's signal was not believed while its values could not be read:\n\(glib.text)")
            XCTAssertNotNil(
                glib.waitFor(15) { $0["kind"] as? String == "changed" && $0["connectivity"] as? String == "limited" },
                "\(mode): the read was not tried again:\n\(glib.text)")
            for program in programs { program.stop() }
            programs = []
            bus.stop()
        }
        bus = nil
    }

    /// Forged PropertiesChanged in the service's name and NameOwnerChanged in the bus's, unicast and
    /// broadcast: the GLib program hears none of them, and then the service's own change at once.
    func testNobodyButTheServiceIsBelieved() throws {
        bus = try PrivateBus()
        daemon = try DaemonProcess(bus: bus, host: "127.0.0.1")
        try waitForConnectivity("full")
        let glib = try startGLibProgram()
        XCTAssertEqual(glib.events.first?["type"] as? String, "NetobserverNetworkMonitor", glib.text)
        let forged = try runCommand([Paths.python, Paths.clients + "/forge_signals.py", bus.address])
        XCTAssertEqual(forged.status, 0, forged.stderr)
        XCTAssertGreaterThanOrEqual(
            Int(forged.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 4, forged.stdout)
        // The service's own change comes after the forgeries on the bus: by the time it is heard, they were too.
        _ = try runCommand([
            "busctl", "--address=\(bus.address)", "set-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.interface, "Host", "s", "198.18.0.1",
        ])
        try waitForConnectivity("none")
        lastChange(glib, toward: "local", available: false)
        let changes = glib.events.filter { $0["kind"] as? String == "changed" }
        XCTAssertEqual(changes.count, 1, "a forged signal was believed:\n\(glib.text)")
        XCTAssertEqual(
            glib.events.filter { $0["kind"] as? String == "notify" && $0["property"] as? String == "network-metered" }
                .count, 0,
            glib.text)
    }
}
