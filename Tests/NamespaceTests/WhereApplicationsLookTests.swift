import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// The service's verdict where applications already look, with the real programs: a GLib
/// program (python3-gi) loading the GIO module from the build, xdg-desktop-portal on a session
/// bus of its own, and Qt's QNetworkInformation glib backend, all in a client namespace behind a
/// router whose faults the test makes. The test's bus is their system bus.
final class WhereApplicationsLookTests: XCTestCase {
    var hosts: ThreeHosts!
    var bus: PrivateBus!
    var daemon: DaemonProcess?
    var programs: [JSONLineProgram] = []
    let checkURL = "http://198.18.2.2/generate_204"

    override func setUpWithError() throws {
        try requireRoot()
        guard FileManager.default.fileExists(atPath: Paths.gioModules + "/libgionetobserver.so") else {
            XCTFail("the GIO module is not built: `make gio-module` (make test builds it)")
            return
        }
        hosts = try ThreeHosts(tag: "gm")
        // Names a GLib program may resolve in the client: a private and a public one, from hosts;
        // any other goes to a resolver in the server namespace that is not there.
        let etc = "/etc/netns/\(hosts.client.name)"
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try "127.0.0.1 localhost\n10.9.9.9 intranet.test\n203.0.113.9 public.test\n"
            .write(toFile: etc + "/hosts", atomically: true, encoding: .utf8)
        try "nameserver 198.18.2.2\noptions timeout:1 attempts:1\n".write(
            toFile: etc + "/resolv.conf", atomically: true, encoding: .utf8)
        bus = try PrivateBus()
    }

    override func tearDown() {
        for program in programs { program.stop() }
        daemon?.stop()
        bus?.stop()
        if let hosts { try? FileManager.default.removeItem(atPath: "/etc/netns/\(hosts.client.name)") }
        hosts = nil
    }

    // MARK: Helpers

    /// What every program that loads GIO modules gets: the module from the build and the test's bus as the system bus.
    var gioEnvironment: [String: String] {
        ["GIO_EXTRA_MODULES": Paths.gioModules, "DBUS_SYSTEM_BUS_ADDRESS": bus.address]
    }

    func start(
        _ arguments: [String], in namespace: NetworkNamespace? = nil, environment: [String: String] = [:]
    ) throws -> JSONLineProgram {
        let program = try JSONLineProgram(
            arguments, namespace: (namespace ?? hosts.client).name,
            environment: environment, directory: bus.directory)
        programs.append(program)
        return program
    }

    func checkServer(
        _ mode: String, in namespace: NetworkNamespace? = nil, address: String = "198.18.2.2", port: Int = 80,
        location: String = ""
    ) throws {
        let server = try start(
            [Paths.python, Paths.namespaceHelpers + "/check_server.py", address, "\(port)", mode, location],
            in: namespace ?? hosts.server)
        for _ in 0..<300 where !server.text.contains("ready") { usleep(10_000) }
    }

    func startDaemon() throws {
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200", "--timeout", "200", "--check-url", checkURL],
            namespace: hosts.client.name, host: "198.18.2.2")
    }

    func startGLibProgram(environment: [String: String] = [:]) throws -> JSONLineProgram {
        let program = try start(
            [Paths.python, Paths.namespaceHelpers + "/glib_monitor.py"],
            environment: gioEnvironment.merging(environment) { $1 })
        guard program.waitFor(10, { $0["kind"] as? String == "start" }) != nil else {
            throw NSError(domain: "glib_monitor.py did not start: \(program.text)", code: 1)
        }
        return program
    }

    func wait(
        _ property: P, _ expected: String, timeout: Double = 10, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        guard try waitForProperty(property, expected, bus: bus, timeout: timeout) == nil else { return }
        XCTFail(
            "\(property.name) did not become '\(expected)'; it is '\(try readProperty(property, bus: bus))', "
                + "Reason '\(try readProperty(.reason, bus: bus))'\n\(daemon?.log ?? "")", file: file, line: line)
    }

    func router(_ command: String) throws { _ = try hosts.router.exec(command) }

    /// Waits for the GLib program to be told `connectivity` (its nick) and `available`; checks the values it reads then.
    @discardableResult
    func expect(
        _ program: JSONLineProgram, available: Bool, connectivity: String, metered: Bool = false,
        file: StaticString = #filePath, line: UInt = #line
    ) -> [String: Any]? {
        let seen = program.waitFor {
            $0["kind"] as? String == "changed" && $0["connectivity"] as? String == connectivity
                && $0["available"] as? Bool == available && $0["metered"] as? Bool == metered
        }
        XCTAssertNotNil(
            seen,
            "the GLib program was not told available=\(available) connectivity=\(connectivity) "
                + "metered=\(metered):\n\(program.text)", file: file, line: line)
        XCTAssertEqual(
            seen?["signal_available"] as? Bool, available, "network-changed's argument", file: file, line: line)
        return seen
    }

    func reach(_ program: JSONLineProgram, _ address: String, async: Bool = false) -> String {
        let mode = async ? "async" : "sync"
        let before = program.events.count
        program.send((async ? "reach-async " : "reach ") + address)
        let answer = program.waitFor(10, skipping: before) {
            $0["kind"] as? String == "reach" && $0["address"] as? String == address && $0["mode"] as? String == mode
        }
        return answer?["result"] as? String ?? "no answer"
    }

    /// can_reach, sync and async, for each address: what the two said, if they agree.
    func reachability(
        _ program: JSONLineProgram, _ addresses: [String], file: StaticString = #filePath, line: UInt = #line
    ) -> [String] {
        addresses.map { address in
            let sync = reach(program, address)
            XCTAssertEqual(
                reach(program, address, async: true), sync, "can_reach_async vs can_reach for \(address)", file: file,
                line: line)
            return sync
        }
    }

    /// network-changed comes once per change: two in a row with the same values only when the
    /// Interface changed between them, which `interfaceChanges` counts.
    func assertEachChangeChangedSomething(
        _ program: JSONLineProgram, interfaceChanges: Int,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let changes = program.events.filter { $0["kind"] as? String == "changed" }
            .map { "\($0["available"] ?? "")/\($0["connectivity"] ?? "")/\($0["metered"] ?? "")" }
        let repeats = zip(changes, changes.dropFirst()).filter { $0 == $1 }.count
        XCTAssertLessThanOrEqual(
            repeats, interfaceChanges, "network-changed more than once for one change: \(changes)",
            file: file, line: line)
    }

    func notifies(_ program: JSONLineProgram, after index: Int) -> [String] {
        program.events.dropFirst(index).filter { $0["kind"] as? String == "notify" }.compactMap {
            $0["property"] as? String
        }
    }

    // MARK: GLib

    func testAGLibProgramHearsTheServicesVerdictUnderEveryFault() throws {
        try checkServer("204")
        try startDaemon()
        try wait(.connectivity, "full")
        // The HTTP check connects to the address the service resolved (CURLOPT_RESOLVE): libcurl starts no resolver thread.
        if let daemon {
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task").count) ?? -1
            XCTAssertEqual(threads, 1, "the daemon stays single-threaded through its HTTP checks")
        }
        let glib = try startGLibProgram()
        let start = glib.events.first
        XCTAssertEqual(
            start?["type"] as? String, "NetobserverNetworkMonitor", "GLib did not pick the module: \(glib.text)")
        XCTAssertEqual(start?["available"] as? Bool, true)
        XCTAssertEqual(start?["connectivity"] as? String, "full")
        XCTAssertEqual(start?["metered"] as? Bool, false)
        XCTAssertEqual(
            reachability(
                glib,
                ["10.1.2.3", "fd00:9::1", "fe80::1", "203.0.113.5", "2001:db8::5", "intranet.test", "public.test"]),
            ["ok", "ok", "ok", "ok", "ok", "ok", "ok"])
        // A name nobody answers for: the resolver's error, as GLib's own monitors give it.
        let unresolved = reach(glib, "nowhere.test")
        XCTAssertFalse(["ok", "network-unreachable", "host-unreachable", "no answer"].contains(unresolved), unresolved)

        // Upstream silent: a route, no answer. Limited, still available; only local addresses are reachable.
        var mark = glib.events.count
        try router("iptables -I FORWARD -j DROP")
        try wait(.connectivity, "limited")
        expect(glib, available: true, connectivity: "limited")
        XCTAssertEqual(notifies(glib, after: mark), ["connectivity"])
        XCTAssertEqual(
            reachability(glib, ["10.1.2.3", "fd00:9::1", "intranet.test", "203.0.113.5", "public.test"]),
            ["ok", "ok", "ok", "host-unreachable", "host-unreachable"])
        mark = glib.events.count
        try router("iptables -D FORWARD -j DROP")
        try wait(.connectivity, "full")
        expect(glib, available: true, connectivity: "full")
        XCTAssertEqual(notifies(glib, after: mark), ["connectivity"])

        // A captive portal.
        try checkServer(
            "302", in: hosts.router, address: "198.18.0.1", port: 8080, location: "http://198.18.0.1:8080/login")
        try hosts.closePortal()
        try wait(.connectivity, "portal")
        expect(glib, available: true, connectivity: "portal")
        XCTAssertEqual(reachability(glib, ["10.1.2.3", "203.0.113.5"]), ["ok", "host-unreachable"])
        try hosts.openPortal()
        try wait(.connectivity, "full")
        expect(glib, available: true, connectivity: "full")

        // Link down: no route, not available; nothing is reachable, local or not.
        mark = glib.events.count
        try hosts.client.ip("link set \(hosts.clientLink) down")
        try wait(.connectivity, "none")
        expect(glib, available: false, connectivity: "local")
        XCTAssertEqual(Set(notifies(glib, after: mark)), ["network-available", "connectivity"])
        XCTAssertEqual(
            reachability(glib, ["10.1.2.3", "203.0.113.5", "public.test"]),
            ["network-unreachable", "network-unreachable", "network-unreachable"])
        try hosts.client.ip("link set \(hosts.clientLink) up")
        try hosts.client.ip("route replace default via 198.18.0.1")
        try wait(.connectivity, "full")
        expect(glib, available: true, connectivity: "full")
        usleep(300_000)
        // The Interface changed twice (gone at link-down, back after): each may be a network-changed of its own.
        assertEachChangeChangedSomething(glib, interfaceChanges: 2)
    }

    /// NetworkManager (python3-dbusmock) saying the client's link is metered, and the service full behind it.
    func startMeteredService() throws -> MockService {
        let networkManager = try MockService.networkManager(bus: bus)
        try networkManager.addEthernetDevice("veth", interface: hosts.clientLink, metered: 1)
        try checkServer("204")
        try startDaemon()
        try wait(.connectivity, "full")
        try wait(.metered, "true")
        return networkManager
    }

    func testMeteredFromNetworkManagerAndNetworkManagersOwnCheck() throws {
        let networkManager = try startMeteredService()
        // NetworkManager runs, but says nothing of a check of its own: the module's.
        let glib = try startGLibProgram()
        XCTAssertEqual(glib.events.first?["type"] as? String, "NetobserverNetworkMonitor", glib.text)
        XCTAssertEqual(glib.events.first?["metered"] as? Bool, true)
        let mark = glib.events.count
        try networkManager.setMetered("veth", 2)
        try wait(.metered, "false")
        expect(glib, available: true, connectivity: "full", metered: false)
        XCTAssertEqual(notifies(glib, after: mark), ["network-metered"])
        glib.stop()

        // NetworkManager checks connectivity itself: the desktop keeps its one verdict.
        let manager = "org.freedesktop.NetworkManager"
        for (property, value) in [("ConnectivityCheckEnabled", "true"), ("ConnectivityCheckAvailable", "true")] {
            try networkManager.call(
                "/org/freedesktop/NetworkManager", "org.freedesktop.DBus.Mock", "AddProperty", "ssv",
                [manager, property, "b", value])
        }
        let deferring = try startGLibProgram()
        XCTAssertNotEqual(deferring.events.first?["type"] as? String, "NetobserverNetworkMonitor", deferring.text)
        XCTAssertEqual(deferring.events.first?["type"] as? String, "GNetworkMonitorNM", deferring.text)
        // Its check switched off (or not available): the module's again.
        try networkManager.call(
            "/org/freedesktop/NetworkManager", "org.freedesktop.DBus.Mock", "UpdateProperties", "sa{sv}",
            [manager, "1", "ConnectivityCheckEnabled", "b", "false"])
        let again = try startGLibProgram()
        XCTAssertEqual(again.events.first?["type"] as? String, "NetobserverNetworkMonitor", again.text)
    }

    // MARK: The portal

    func testTheDesktopPortalAnswersWithTheServicesValues() throws {
        let networkManager = try startMeteredService()
        let session = try PrivateBus()
        defer { session.stop() }
        let portal = try start(
            ["/usr/libexec/xdg-desktop-portal", "--replace"],
            environment: gioEnvironment.merging(["DBUS_SESSION_BUS_ADDRESS": session.address]) { $1 })
        var owned = false
        for _ in 0..<500 where !owned {
            owned =
                (try? runCommand(["busctl", "--address=\(session.address)", "status", "org.freedesktop.portal.Desktop"]))?
                .status == 0
            if !owned { usleep(10_000) }
        }
        XCTAssertTrue(owned, "xdg-desktop-portal did not take its name: \(portal.text)")
        let client = try start([Paths.python, Paths.namespaceHelpers + "/portal_client.py", session.address])
        let first = client.waitFor(10) { $0["kind"] as? String == "start" }
        XCTAssertEqual(first?["available"] as? Bool, true, client.text)
        XCTAssertEqual(first?["connectivity"] as? Int, 4, client.text)
        XCTAssertEqual(first?["metered"] as? Bool, true, client.text)
        try networkManager.setMetered("veth", 2)
        try wait(.metered, "false")
        let unmetered = client.waitFor { $0["kind"] as? String == "changed" && $0["metered"] as? Bool == false }
        XCTAssertEqual(unmetered?["connectivity"] as? Int, 4, client.text)

        try hosts.client.ip("link set \(hosts.clientLink) down")
        try wait(.connectivity, "none")
        let offline = client.waitFor { $0["kind"] as? String == "changed" && $0["connectivity"] as? Int == 1 }
        XCTAssertEqual(offline?["available"] as? Bool, false, client.text)
        try hosts.client.ip("link set \(hosts.clientLink) up")
        try hosts.client.ip("route replace default via 198.18.0.1")
        try router("iptables -I FORWARD -j DROP")
        try wait(.connectivity, "limited")
        let limited = client.waitFor { $0["kind"] as? String == "changed" && $0["connectivity"] as? Int == 2 }
        XCTAssertEqual(limited?["available"] as? Bool, true, client.text)
        let before = client.events.count
        client.send("status")
        let asked = client.waitFor(skipping: before) { $0["kind"] as? String == "status" }
        XCTAssertEqual(asked?["connectivity"] as? Int, 2, client.text)
        XCTAssertEqual(asked?["get_connectivity"] as? Int, 2, client.text)
        XCTAssertEqual(asked?["get_available"] as? Bool, true, client.text)
        XCTAssertEqual(asked?["get_metered"] as? Bool, false, client.text)
    }

    // MARK: Qt

    func testQtsGLibBackendFollowsTheService() throws {
        let backends = try runCommand([
            Paths.python, "-c",
            "from PyQt6.QtNetwork import QNetworkInformation as Q; print(' '.join(Q.availableBackends()))",
        ])
        guard
            backends.stdout.split(separator: " ").map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }).contains(
                "glib")
        else {
            throw XCTSkip("Qt has no glib QNetworkInformation backend here: \(backends.stdout)\(backends.stderr)")
        }
        try checkServer("204")
        try startDaemon()
        try wait(.connectivity, "full")
        let qt = try start([Paths.python, Paths.namespaceHelpers + "/qt_network.py"], environment: gioEnvironment)
        let first = qt.waitFor(10) { $0["kind"] as? String == "start" }
        XCTAssertEqual(first?["backend"] as? String, "glib", qt.text)
        XCTAssertEqual(first?["reachability"] as? String, "Online", qt.text)

        try checkServer(
            "302", in: hosts.router, address: "198.18.0.1", port: 8080, location: "http://198.18.0.1:8080/login")
        try hosts.closePortal()
        try wait(.connectivity, "portal")
        XCTAssertNotNil(
            qt.waitFor { $0["portal"] as? Bool == true && $0["reachability"] as? String == "Site" }, qt.text)
        try hosts.openPortal()
        try wait(.connectivity, "full")
        XCTAssertNotNil(qt.waitFor { $0["kind"] as? String == "portal" && $0["portal"] as? Bool == false }, qt.text)

        try hosts.client.ip("link set \(hosts.clientLink) down")
        try wait(.connectivity, "none")
        XCTAssertNotNil(
            qt.waitFor { $0["kind"] as? String == "reachability" && $0["reachability"] as? String == "Disconnected" },
            qt.text)
        try hosts.client.ip("link set \(hosts.clientLink) up")
        try hosts.client.ip("route replace default via 198.18.0.1")
        try wait(.connectivity, "full")
        XCTAssertNotNil(
            qt.waitFor { $0["kind"] as? String == "reachability" && $0["reachability"] as? String == "Online" }, qt.text
        )
    }
}
