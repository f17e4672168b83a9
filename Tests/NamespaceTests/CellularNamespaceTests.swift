import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import MonitorRules
import XCTest

/// AccessTechnology and Metered end to end: the daemon in a client namespace whose
/// route goes over a veth (an Ethernet-looking link), ModemManager and NetworkManager
/// played by python3-dbusmock on the test's bus, handed to the daemon as its system bus.
final class CellularNamespaceTests: XCTestCase {
    var hosts: ThreeHosts!
    var bus: PrivateBus!
    var daemon: DaemonProcess?
    var watcher: SignalWatcher?

    override func setUpWithError() throws {
        try requireRoot()
        hosts = try ThreeHosts(tag: "cl")
        bus = try PrivateBus()
    }

    override func tearDown() {
        watcher?.stop()
        daemon?.stop()
        bus?.stop()
        hosts = nil
    }

    var link: String { hosts.clientLink }

    func startDaemon() throws {
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200", "--timeout", "200"], namespace: hosts.client.name,
            host: "198.18.2.2")
    }

    func get(_ property: P, path: String = MonitorContract.objectPath) throws -> String {
        try readProperty(property, bus: bus, path: path)
    }

    /// Polls until `property` reads `expected`.
    func wait(
        _ property: P, _ expected: String, path: String = MonitorContract.objectPath, timeout: Double = 5,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        guard try waitForProperty(property, expected, bus: bus, path: path, timeout: timeout) == nil else { return }
        XCTFail(
            "\(property.name) did not become '\(expected)' in \(timeout) s; it is '\(try get(property))'\n\(daemon?.log ?? "")",
            file: file, line: line)
    }

    func testAModemsNetPortIsCellularAtEveryGeneration() throws {
        let modemManager = try MockService.modemManager(bus: bus)
        try modemManager.addModem(0, netPorts: [link], accessTechnologies: 1 << 14)
        try startDaemon()
        try wait(.status, "cellular")
        XCTAssertEqual(try get(.accessTechnology), "4g")
        XCTAssertEqual(try get(.metered), "true")
        XCTAssertTrue(daemon?.log.contains("ModemManager: 1 modem") == true, daemon?.log ?? "")

        let generations: [(UInt32, String)] = [
            (1 << 1, "2g"), (1 << 4, "2g"), (1 << 10, "2g"), (1 << 5, "3g"), (1 << 9, "3g"), (1 << 13, "3g"),
            (1 << 16, "4g"), (1 << 17, "4g"), (1 << 15, "5g"), (1 << 14 | 1 << 15, "5g"), (0, ""), (1 << 5, "3g"),
        ]
        for (mask, generation) in generations {
            try modemManager.setAccessTechnologies(modem: 0, mask)
            try wait(.accessTechnology, generation)
            XCTAssertEqual(try get(.status), "cellular", "mask \(mask)")
        }

        // 3G → 4G is one PropertiesChanged of AccessTechnology; Status stays.
        let watcher = try SignalWatcher(bus: bus)
        self.watcher = watcher
        try modemManager.setAccessTechnologies(modem: 0, 1 << 14)
        try wait(.accessTechnology, "4g")
        usleep(200_000)
        let changes = watcher.propertyChanges.filter { $0["AccessTechnology"] != nil }
        XCTAssertEqual(changes.count, 1, "\(watcher.propertyChanges)")
        XCTAssertEqual(changes.first?["AccessTechnology"] as? String, "4g")
        XCTAssertNil(changes.first?["Status"])

        let screen = try runCommand([Paths.client, "--address", bus.address, "status"])
        XCTAssertTrue(screen.stdout.contains("Status:       cellular (4g, metered) (reachable)"), screen.stdout)
        // An added target over the same route hears the same.
        let added = try runCommand([Paths.client, "--address", bus.address, "add", "198.18.2.3"])
        let path = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(added.status, 0, added.stderr)
        try wait(.status, "cellular", path: path)
        XCTAssertEqual(try get(.accessTechnology, path: path), "4g")

        // Unplugged: the link is the kernel's again.
        try modemManager.removeModem(0)
        try wait(.status, "ethernet")
        XCTAssertEqual(try get(.accessTechnology), "")
        XCTAssertEqual(try get(.metered), "false")
        try wait(.accessTechnology, "", path: path)
        XCTAssertEqual(try get(.status, path: path), "ethernet")
    }

    func testModemManagerStartingAfterTheDaemonAndLeaving() throws {
        try startDaemon()
        try wait(.status, "ethernet")
        XCTAssertEqual(try get(.metered), "false")
        let modemManager = try MockService.modemManager(bus: bus)
        try modemManager.addModem(3, netPorts: ["wwan9", link], accessTechnologies: 1 << 9)
        try wait(.status, "cellular")
        XCTAssertEqual(try get(.accessTechnology), "3g")
        modemManager.stop()
        try wait(.status, "ethernet")
        XCTAssertEqual(try get(.accessTechnology), "")
        XCTAssertEqual(try get(.metered), "false")
        XCTAssertTrue(daemon?.log.contains("ModemManager: not running") == true, daemon?.log ?? "")
    }

    func testNetworkManagerSaysWhetherAnEthernetLinkIsMetered() throws {
        let networkManager = try MockService.networkManager(bus: bus)
        try networkManager.addEthernetDevice("veth", interface: link, metered: 1)
        try startDaemon()
        try wait(.status, "ethernet")
        try wait(.metered, "true")
        XCTAssertEqual(try get(.accessTechnology), "")
        for (value, metered) in [(2, "false"), (3, "true"), (4, "false"), (0, "false"), (1, "true")]
            as [(UInt32, String)]
        {
            try networkManager.setMetered("veth", value)
            try wait(.metered, metered)
            XCTAssertEqual(try get(.status), "ethernet")
        }
        let screen = try runCommand([Paths.client, "--address", bus.address, "status"])
        XCTAssertTrue(screen.stdout.contains("Status:       ethernet (metered) (reachable)"), screen.stdout)
        networkManager.stop()
        try wait(.metered, "false")
    }

    /// Issue 45 item 4: NetworkManager on the bus says the route's device is metered; the first published verdict
    /// already carries it (GetAll right after the first StatusChanged had Metered false in 2 of 3 runs).
    func testTheFirstVerdictAlreadyCarriesMetered() throws {
        let networkManager = try MockService.networkManager(bus: bus)
        try networkManager.addEthernetDevice("veth", interface: link, metered: 1)
        for run in 1...3 {
            try startDaemon()
            // Status and Metered read together, every few milliseconds, until the first verdict.
            var seen = ""
            let deadline = monotonicSeconds() + 5
            while monotonicSeconds() < deadline {
                seen = try runCommand([
                    "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName,
                    MonitorContract.objectPath, MonitorContract.interface, P.status.name, P.metered.name,
                ]).stdout
                if !seen.hasPrefix("s \"unknown\"") { break }
                usleep(3_000)
            }
            XCTAssertEqual(
                seen, "s \"ethernet\"\nb true\n", "run \(run): the first verdict without NetworkManager's word")
            daemon?.stop()
        }
    }

    /// A ModemManager whose GetManagedObjects hangs for 8 s: the service answers as ever.
    func testAModemManagerThatNeverAnswersStallsNothing() throws {
        let name = "org.freedesktop.ModemManager1"
        let hanging = try MockService(bus: bus, name: name, arguments: [name, "/org/freedesktop/ModemManager1", name])
        try hanging.call(
            "/org/freedesktop/ModemManager1", "org.freedesktop.DBus.Mock", "AddMethod", "sssss",
            [
                "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", "", "a{oa{sa{sv}}}",
                "__import__('time').sleep(8); ret = {}",
            ])
        try startDaemon()
        try wait(.status, "ethernet")
        var slowest = 0.0
        for _ in 0..<20 {
            let start = Date()
            XCTAssertEqual(try get(.status), "ethernet")
            slowest = max(slowest, Date().timeIntervalSince(start))
            usleep(50_000)
        }
        XCTAssertLessThan(slowest, 1.0, "a Get took \(slowest) s while ModemManager hung")
        XCTAssertEqual(try get(.accessTechnology), "")
    }
}
