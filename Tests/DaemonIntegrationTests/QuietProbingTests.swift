import Foundation
import IntegrationSupport
import MonitorContract
import XCTest

/// INTERFACE.md "Quiet by default", end to end: a daemon told `--probing adaptive` probes a calm host once per
/// idle interval, a Set of Probing to `steady` brings the Interval back at once, and a bad IdleInterval is
/// InvalidArgs naming the property and what it accepts.
final class QuietProbingTests: DaemonTestCase {
    override var daemonArguments: [String] {
        ["--interval", "100", "--probing", "adaptive", "--idle-interval", "1000"]
    }
    override var daemonHost: String { "127.0.0.1" }

    private func probesSent() throws -> UInt64 {
        UInt64(try readProperty(.probesSent, bus: bus)) ?? 0
    }

    func testACalmHostIsProbedOncePerIdleIntervalAndSteadyBringsTheIntervalBack() throws {
        XCTAssertNotNil(try waitForProperty(.connectivity, "full", bus: bus, timeout: 10))
        XCTAssertEqual(try readProperty(.probing, bus: bus), "adaptive")
        XCTAssertEqual(try readProperty(.idleInterval, bus: bus), "1000")
        let calmFrom = try probesSent()
        Thread.sleep(forTimeInterval: 4)
        let calm = try probesSent() - calmFrom
        XCTAssertLessThanOrEqual(calm, 6, "calm: one probe per second, not ten (\(calm) in 4 s)")
        XCTAssertGreaterThanOrEqual(calm, 2, "calm still probes once per idle interval")
        let steady = try set(.probing, "steady")
        XCTAssertEqual(steady.status, 0, steady.stderr)
        let steadyFrom = try probesSent()
        Thread.sleep(forTimeInterval: 2)
        let sent = try probesSent() - steadyFrom
        XCTAssertGreaterThanOrEqual(sent, 10, "steady: every Interval again (\(sent) in 2 s)")
        let bad = try set(.idleInterval, "999")
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(
            bad.stderr.contains("IdleInterval: 999 is out of range (accepted: 1000–3600000 ms)"), bad.stderr)
        XCTAssertEqual(try readProperty(.idleInterval, bus: bus), "1000", "nothing changed")
    }
}
