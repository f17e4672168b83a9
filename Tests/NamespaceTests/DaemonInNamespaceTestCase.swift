import Foundation
import IntegrationSupport
import MonitorContract
import XCTest

/// What a test of the daemon in a client namespace behind a router holds and releases: the three
/// hosts, a private bus, the daemon, a signal watcher and helper processes, stopped in that order
/// at the end; and reading and waiting for properties, saying on failure what the `alongside`
/// properties and the daemon's log said.
class DaemonInNamespaceTestCase: XCTestCase {
    var hosts: ThreeHosts!
    var bus: PrivateBus!
    var daemon: DaemonProcess?
    var watcher: SignalWatcher?
    var helpers: [Process] = []
    /// Shown beside a property that did not become what a test waited for.
    var alongside: [P] { [.reason] }

    override func tearDown() {
        watcher?.stop()
        for helper in helpers where helper.isRunning {
            helper.terminate()
            helper.waitUntilExit()
        }
        daemon?.stop()
        bus?.stop()
        hosts?.client.forgetNames()
        hosts = nil
    }

    func get(_ property: P) throws -> String { try readProperty(property, bus: bus) }

    /// Polls until `property` reads `expected`; returns the seconds it took.
    @discardableResult
    func wait(_ property: P, _ expected: String, timeout: Double = 5, file: StaticString = #filePath, line: UInt = #line) throws -> Double {
        if let took = try waitForProperty(property, expected, bus: bus, timeout: timeout) { return took }
        XCTFail(notBecoming(property, expected, within: timeout, bus: bus, alongside: alongside, log: daemon?.log ?? ""),
                file: file, line: line)
        return timeout
    }
}
