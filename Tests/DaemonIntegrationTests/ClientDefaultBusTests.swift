import Foundation
import IntegrationSupport
import XCTest

/// Issue 54 item 6 (N34): with no bus flag, `netobserver` reads the system service whenever there is one — running
/// or activatable on the system bus — and the session bus only otherwise; no session-bus activation file is
/// installed, so the obvious command never starts a private daemon. Two private buses stand for the system and the
/// session bus (libdbus takes them from DBUS_SYSTEM_BUS_ADDRESS and DBUS_SESSION_BUS_ADDRESS).
final class ClientDefaultBusTests: XCTestCase {
    var system: PrivateBus!
    var session: PrivateBus!
    var daemons: [DaemonProcess] = []

    override func tearDown() {
        for daemon in daemons { daemon.stop() }
        // An activated daemon is the bus's child: stopping the bus ends its connection, and the daemon exits.
        system?.stop()
        session?.stop()
        super.tearDown()
    }

    func host(seenWith arguments: [String] = []) throws -> (host: String, outcome: Outcome) {
        let outcome = try runCommand(
            [Paths.client] + arguments + ["status", "--json"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": system.address, "DBUS_SESSION_BUS_ADDRESS": session.address])
        guard outcome.status == 0,
            let object = try? JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any],
            let host = object["Host"] as? String
        else { return ("", outcome) }
        return (host, outcome)
    }

    func testTheSystemServiceIsReadWhenItRuns() throws {
        system = try PrivateBus()
        session = try PrivateBus()
        daemons.append(try DaemonProcess(bus: system, host: "198.18.0.7"))
        daemons.append(try DaemonProcess(bus: session, host: "198.18.0.8"))
        XCTAssertEqual(try host().host, "198.18.0.7", "the system service, not a private one")
        XCTAssertEqual(try host(seenWith: ["--session"]).host, "198.18.0.8", "a flag still chooses")
    }

    func testTheSessionBusIsReadWhenTheSystemBusHasNoService() throws {
        system = try PrivateBus()
        session = try PrivateBus()
        daemons.append(try DaemonProcess(bus: session, host: "198.18.0.8"))
        XCTAssertEqual(try host().host, "198.18.0.8")
        // Without any service the message names the session bus, where it looked last.
        for daemon in daemons { daemon.stop() }
        daemons = []
        let (_, outcome) = try host()
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.contains("not running on the session bus"), outcome.stderr)
    }

    /// Installed and stopped: the system bus can start it, so the client asks there (and the bus starts it).
    func testAnActivatableSystemServiceIsReadAndStarted() throws {
        let services = FileManager.default.temporaryDirectory.appendingPathComponent(
            "netobserver-services-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: services) }
        system = try PrivateBus(serviceDirectory: services)
        session = try PrivateBus()
        daemons.append(try DaemonProcess(bus: session, host: "198.18.0.8"))
        // In a network namespace of its own, as every test's daemon: it probes nothing outside.
        let unshare = geteuid() == 0 ? "/usr/bin/unshare --net" : "/usr/bin/unshare --net --map-root-user"
        try """
        [D-BUS Service]
        Name=org.netobserver.Monitor
        Exec=\(unshare) \(Paths.daemon) --address \(system.socketAddress) --host 198.18.0.7 --state-dir \(system.directory)/state
        """.write(toFile: services + "/org.netobserver.Monitor.service", atomically: true, encoding: .utf8)
        let (host, outcome) = try host()
        XCTAssertEqual(host, "198.18.0.7", outcome.stdout + outcome.stderr)
    }
}
