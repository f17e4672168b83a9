import Foundation
import IntegrationSupport
import MonitorContract
import XCTest

/// ModemManager and NetworkManager are looked for on the system bus, whatever bus the
/// daemon serves: its absence or loss never stops the service.
final class SystemBusTests: XCTestCase {
    var bus: PrivateBus!
    var system: PrivateBus!

    override func setUpWithError() throws {
        bus = try PrivateBus()
        system = try PrivateBus()
    }

    override func tearDown() {
        bus?.stop()
        system?.stop()
    }

    func get(_ property: P) throws -> String {
        try runCommand([
            "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.interface, property.name,
        ]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testLosingTheSystemBusStopsOnlyTheFollowing() throws {
        let modemManager = try MockService.modemManager(bus: system)
        try modemManager.addModem(0, netPorts: ["wwan0"], accessTechnologies: 1 << 14)
        let daemon = try DaemonProcess(bus: bus, environment: ["DBUS_SYSTEM_BUS_ADDRESS": system.address])
        try daemon.waitUntil("ModemManager: 1 modem")
        modemManager.stop()
        system.stop()
        try daemon.waitUntil("lost the system bus")
        XCTAssertTrue(daemon.process.isRunning)
        XCTAssertEqual(try get(.status), "s \"none\"")
        XCTAssertEqual(try get(.accessTechnology), "s \"\"")
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
    }

    func testNoSystemBusAtAll() throws {
        let daemon = try DaemonProcess(
            bus: bus, environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(bus.directory)/nothing-here"])
        try daemon.waitUntil("modems and metered links are not followed")
        XCTAssertEqual(try get(.metered), "b false")
        daemon.stop()
        XCTAssertEqual(daemon.waitForExit(), 0)
    }
}
