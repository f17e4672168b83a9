import Foundation
import IntegrationSupport
import MonitorContract
import XCTest

/// A bus set up and torn down around each test, whose daemons each test starts itself.
class BusTestCase: XCTestCase {
    var bus: PrivateBus!

    override func setUpWithError() throws {
        bus = try PrivateBus()
    }

    override func tearDown() {
        bus?.stop()
    }

    func busctl(_ arguments: [String]) throws -> Outcome {
        try runCommand(["busctl", "--address=\(bus.address)"] + arguments)
    }

    /// Sets a property of the Monitor with busctl.
    func set(_ property: P, _ value: String) throws -> Outcome {
        try busctl([
            "set-property", MonitorContract.busName, MonitorContract.objectPath, MonitorContract.interface,
            property.name, property.type.signature, value,
        ])
    }
}

/// A bus and a daemon on it, set up and torn down around each test.
class DaemonTestCase: BusTestCase {
    var daemon: DaemonProcess!

    /// Extra daemon flags for this test class, and the Host it probes.
    var daemonArguments: [String] { [] }
    var daemonHost: String { "198.18.0.1" }
    /// Whether users other than the test's may connect to its bus.
    var busAllowsAnyUser: Bool { false }

    static let destination = MonitorContract.busName
    static let path = MonitorContract.objectPath
    static let interface = MonitorContract.interface

    override func setUpWithError() throws {
        bus = try PrivateBus(anyUser: busAllowsAnyUser)
        daemon = try DaemonProcess(bus: bus, arguments: daemonArguments, host: daemonHost)
    }

    override func tearDown() {
        daemon?.stop()
        super.tearDown()
    }

    func gdbus(_ arguments: [String]) throws -> Outcome {
        try runCommand(["gdbus"] + arguments, environment: bus.environment)
    }

    /// Runs clients/<script> with the bus address and extra arguments; its stdout is returned on success.
    @discardableResult
    func python(
        _ script: String, _ arguments: [String] = [], timeout: TimeInterval = 60,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> String {
        let outcome = try runCommand(
            [Paths.python, Paths.clients + "/" + script, bus.address] + arguments,
            environment: bus.environment, timeout: timeout)
        XCTAssertEqual(
            outcome.status, 0,
            "\(script) failed:\n\(outcome.stdout)\n\(outcome.stderr)\ndaemon log:\n\(daemon?.log ?? "")",
            file: file, line: line)
        return outcome.stdout
    }
}
