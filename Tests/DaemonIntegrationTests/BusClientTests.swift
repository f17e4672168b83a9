import Foundation
import IntegrationSupport
import MonitorContract
import MonitorRules
import XCTest

/// busctl, gdbus and qdbus against a running daemon.
final class BusClientTests: DaemonTestCase {
    func testBusctlTree() throws {
        let tree = try busctl(["tree", Self.destination])
        XCTAssertEqual(tree.status, 0, tree.stderr)
        for path in ["/org", "/org/netobserver", MonitorContract.objectPath] {
            XCTAssertTrue(tree.stdout.contains(path), tree.stdout)
        }
    }

    func testBusctlIntrospectShowsEveryMember() throws {
        let out = try busctl(["introspect", Self.destination, Self.path])
        XCTAssertEqual(out.status, 0, out.stderr)
        let lines = out.stdout.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        }
        func row(_ member: String) -> [String]? { lines.first { $0.first == member } }
        XCTAssertEqual(row(".Check")?[1...2], ["method", "-"])
        XCTAssertEqual(row(".Wait")?[1...2], ["method", "u"])
        XCTAssertEqual(row(".StatusChanged")?[1...2], ["signal", "ss"])
        for property in MonitorContract.Property.allCases {
            let (name, type, writable) = (property.name, property.type.signature, property.access == .readwrite)
            let cells = try XCTUnwrap(row("." + name), name)
            XCTAssertEqual(cells[1], "property", name)
            XCTAssertEqual(cells[2], type, name)
            XCTAssertEqual(cells.last == "writable", writable, name)
        }
        for quiet in [".RoundTripTime", ".PacketLoss"] {
            XCTAssertFalse(
                row(quiet)?.contains("emits-change") ?? true, "\(quiet) is annotated EmitsChangedSignal=false")
        }
        XCTAssertTrue(row(".Status")?.contains("emits-change") ?? false)
        for standard in [
            "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Peer",
        ] {
            XCTAssertNotNil(row(standard), standard)
        }
    }

    func testLiveIntrospectionMatchesShippedXML() throws {
        let shipped = try String(contentsOfFile: Paths.interfaceXML, encoding: .utf8)
        let start = try XCTUnwrap(shipped.range(of: " <interface name=\"org.netobserver.Monitor\">"))
        let end = try XCTUnwrap(shipped.range(of: " </interface>\n", range: start.lowerBound..<shipped.endIndex))
        let block = String(shipped[start.lowerBound..<end.upperBound])
        let live = try python("introspect.py")
        XCTAssertTrue(live.contains(block), "live introspection:\n\(live)\nshipped block:\n\(block)")
    }

    func testBusctlGetSetAndCall() throws {
        let status = try busctl([
            "get-property", Self.destination, Self.path, Self.interface, P.status.name, P.host.name, P.interval.name,
            P.reachable.name,
            P.roundTripTime.name, P.packetLoss.name,
        ])
        // No route in its namespace: every probe fails to send, so PacketLoss is 1.
        XCTAssertEqual(status.stdout, "s \"none\"\ns \"198.18.0.1\"\nu 1000\nb false\nt 0\nd 1\n", status.stderr)
        XCTAssertEqual(
            try busctl(["set-property", Self.destination, Self.path, Self.interface, P.timeout.name, "u", "250"])
                .status, 0)
        XCTAssertEqual(
            try busctl(["get-property", Self.destination, Self.path, Self.interface, P.timeout.name]).stdout, "u 250\n")
        let bad = try busctl(["set-property", Self.destination, Self.path, Self.interface, P.timeout.name, "u", "5"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("\(P.timeout): 5 is out of range (accepted: 10–60000 ms)"), bad.stderr)
        let readOnly = try busctl([
            "set-property", Self.destination, Self.path, Self.interface, P.status.name, "s", "wifi",
        ])
        XCTAssertTrue(readOnly.stderr.contains("read-only"), readOnly.stderr)
        XCTAssertEqual(
            try busctl(["call", Self.destination, Self.path, Self.interface, "Check"]).stdout, "s \"none\"\n")
        XCTAssertEqual(
            try busctl(["call", Self.destination, Self.path, Self.interface, "Wait", "u", "50"]).stdout, "b false\n")
        let ping = try busctl(["call", Self.destination, Self.path, "org.freedesktop.DBus.Peer", "Ping"])
        XCTAssertEqual(ping.status, 0, ping.stderr)
    }

    func testGdbusIntrospectRecurseAndCall() throws {
        let out = try gdbus(["introspect", "--session", "--dest", Self.destination, "--object-path", "/", "--recurse"])
        XCTAssertEqual(out.status, 0, out.stderr)
        for text in [
            "node /org/netobserver/Monitor", "interface org.netobserver.Monitor", "readwrite s \(P.host)",
            "readonly s \(P.status)", "readonly t \(P.roundTripTime)", "Wait(in  u timeout_ms,",
            "StatusChanged(s status,",
        ] {
            XCTAssertTrue(out.stdout.contains(text), "missing \(text) in:\n\(out.stdout)")
        }
        let check = try gdbus([
            "call", "--session", "--dest", Self.destination, "--object-path", Self.path,
            "--method", "org.netobserver.Monitor.Check",
        ])
        XCTAssertEqual(check.stdout, "('none',)\n", check.stderr)
        let bad = try gdbus([
            "call", "--session", "--dest", Self.destination, "--object-path", Self.path,
            "--method", "org.freedesktop.DBus.Properties.Set", MonitorContract.interface, P.host.name, "<'bad host'>",
        ])
        XCTAssertTrue(bad.stderr.contains("org.freedesktop.DBus.Error.InvalidArgs"), bad.stderr)
    }

    func testGdbusMonitorSeesSignals() throws {
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: "/usr/bin/gdbus")
        monitor.arguments = ["monitor", "--session", "--dest", Self.destination]
        monitor.environment = bus.environment
        let output = Pipe()
        monitor.standardOutput = output
        monitor.standardError = FileHandle.nullDevice
        try monitor.run()
        defer { if monitor.isRunning { kill(monitor.processIdentifier, SIGTERM); monitor.waitUntilExit() } }
        usleep(500_000) // its AddMatch must reach the bus first
        XCTAssertEqual(
            try busctl(["set-property", Self.destination, Self.path, Self.interface, P.host.name, "s", "example.org"])
                .status, 0)
        XCTAssertEqual(
            try busctl(["set-property", Self.destination, Self.path, Self.interface, P.interval.name, "u", "300"])
                .status, 0)
        usleep(500_000)
        kill(monitor.processIdentifier, SIGTERM)
        monitor.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // The Host and the Status reset it causes come in one PropertiesChanged.
        XCTAssertTrue(
            text.contains(
                "org.freedesktop.DBus.Properties.PropertiesChanged ('org.netobserver.Monitor', {'\(P.status)': <'unknown'>, '\(P.host)': <'example.org'>"
            ), text)
        XCTAssertTrue(text.contains("org.netobserver.Monitor.StatusChanged ('unknown', 'example.org')"), text)
        XCTAssertTrue(text.contains("{'\(P.interval)': <uint32 300>}"), text)
    }

    func testQdbus() throws {
        let env = bus.environment
        let paths = try runCommand(["qdbus", Self.destination], environment: env)
        XCTAssertEqual(
            paths.stdout.split(separator: "\n").map(String.init),
            ["/", "/org", "/org/netobserver", MonitorContract.objectPath], paths.stderr)
        let members = try runCommand(["qdbus", Self.destination, Self.path], environment: env)
        for member in [
            "property read QString org.netobserver.Monitor.Status",
            "property readwrite uint org.netobserver.Monitor.Interval",
            "method bool org.netobserver.Monitor.Wait(uint timeout_ms)",
            "signal void org.netobserver.Monitor.StatusChanged(QString status, QString host)",
        ] {
            XCTAssertTrue(members.stdout.contains(member), "missing \(member) in:\n\(members.stdout)")
        }
        let check = try runCommand(
            ["qdbus", Self.destination, Self.path, "org.netobserver.Monitor.Check"], environment: env)
        XCTAssertEqual(check.stdout, "none\n", check.stderr)
        let get = try runCommand(
            [
                "qdbus", Self.destination, Self.path, "org.freedesktop.DBus.Properties.Get",
                MonitorContract.interface, P.failureThreshold.name,
            ], environment: env)
        XCTAssertEqual(get.stdout, "2\n", get.stderr)
    }
}

/// The contract through dbus-python and a GDBusProxy.
final class PythonClientTests: DaemonTestCase {
    override var daemonArguments: [String] { ["--verbose"] }

    func testPropertiesErrorsAndSignals() throws {
        let out = try python("properties.py")
        XCTAssertTrue(out.contains("ok methods"), out)
    }

    func testWaitTimeoutLimitAndVanishedClient() throws {
        let out = try python("waits.py")
        XCTAssertTrue(out.contains("ok slots freed after timeouts"), out)
        let unique = try XCTUnwrap(out.split(separator: "\n").first { $0.hasPrefix("unique ") }?.dropFirst(7))
        try daemon.waitUntil("\(unique) left the bus: dropped its 64 pending calls")
    }

    func testGDBusProxyCacheTracksChanges() throws {
        let out = try python("proxy_cache.py")
        XCTAssertTrue(out.contains("ok proxy cache"), out)
    }

    func testConcurrentLoadKeepsMemoryFlat() throws {
        try python("load.py", ["400", "10"]) // warm-up: allocator pools and caches settle
        let before = daemon.ownMemoryKilobytes
        let clients = (0..<4).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Paths.python)
            process.arguments = [Paths.clients + "/load.py", bus.address, "1250", "50"]
            process.standardOutput = Pipe()
            process.standardError = Pipe()
            return process
        }
        for client in clients { try client.run() }
        for client in clients { client.waitUntilExit() }
        for client in clients {
            XCTAssertEqual(
                client.terminationStatus, 0,
                String(
                    decoding: (client.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            )
        }
        let after = daemon.ownMemoryKilobytes
        print(
            "load: own memory (RssAnon + RssShmem) \(before) kB before, \(after) kB after 5000 Gets and 200 Sets from 4 clients"
        )
        XCTAssertLessThan(after - before, 1024, "the daemon's own memory grew from \(before) kB to \(after) kB")
        XCTAssertEqual(
            try busctl(["get-property", Self.destination, Self.path, Self.interface, P.status.name]).stdout,
            "s \"none\"\n")
    }
}
