import Foundation
import IntegrationSupport
import MonitorRules
import XCTest

/// INTERFACE.md "Boot and timers": `wait` and `check --require full|portal|limited`, and the
/// line `wait` leaves in the journal when it gives up.
final class BootAndTimersTests: XCTestCase {
    var bus: PrivateBus!
    var daemon: DaemonProcess?

    override func setUpWithError() throws {
        bus = try PrivateBus()
    }

    override func tearDown() {
        daemon?.stop()
        bus?.stop()
    }

    private func client(_ arguments: [String]) throws -> Outcome {
        try runCommand([Paths.client, "--address", bus.address] + arguments, timeout: 30)
    }

    private func waitForConnectivity(_ expected: String) throws {
        XCTAssertNotNil(try waitForProperty(.connectivity, expected, bus: bus, timeout: 10), "Connectivity \(expected)")
    }

    func testNoRouteIsNotOnlineWhateverIsRequired() throws {
        daemon = try DaemonProcess(bus: bus)
        let wait = try client(["wait", "--timeout", "1"])
        XCTAssertEqual(wait.status, 1)
        XCTAssertEqual(wait.stderr, "netobserver: not online after 1 s: none: no route to 198.18.0.1\n")
        for require in ["full", "portal", "limited"] {
            let check = try client(["check", "--require", require])
            XCTAssertEqual(check.status, 1, require)
            XCTAssertEqual(check.stdout, "none\n")
        }
        let limited = try client(["wait", "--require", "limited", "--timeout", "1"])
        XCTAssertEqual(limited.status, 1)
        XCTAssertTrue(limited.stderr.hasPrefix("netobserver: not online after 1 s: none: "), limited.stderr)
    }

    func testLimitedCountsOnlyWhereLimitedIsEnough() throws {
        // Loopback answers; nothing listens on port 9, so the check fails: limited.
        daemon = try DaemonProcess(bus: bus, arguments: ["--check-url", "http://127.0.0.1:9/"], host: "127.0.0.1")
        try waitForConnectivity("limited")
        XCTAssertEqual(try client(["check"]).status, 1, "full is required by default")
        XCTAssertEqual(try client(["check", "--require", "portal"]).status, 1)
        XCTAssertEqual(try client(["check", "--require", "limited"]).status, 0)
        XCTAssertEqual(try client(["wait", "--require", "limited", "--timeout", "5"]).status, 0)
        let portal = try client(["wait", "--require", "portal", "--timeout", "1"])
        XCTAssertEqual(portal.status, 1)
        XCTAssertTrue(
            portal.stderr.hasPrefix("netobserver: not online after 1 s: limited: check http://127.0.0.1:9/ failed"),
            portal.stderr)
    }

    func testFullIsEnoughForEverything() throws {
        daemon = try DaemonProcess(bus: bus, host: "127.0.0.1")
        try waitForConnectivity("full")
        for require in ["full", "portal", "limited"] {
            XCTAssertEqual(try client(["check", "--require", require]).status, 0, require)
            XCTAssertEqual(try client(["wait", "--require", require, "--timeout", "2"]).status, 0, require)
        }
        XCTAssertEqual(try client(["wait"]).status, 0)
        XCTAssertEqual(try client(["wait", "--require", "online"]).status, 2, "a usage error")
        XCTAssertEqual(try client(["check", "--require"]).status, 2)
    }
}
