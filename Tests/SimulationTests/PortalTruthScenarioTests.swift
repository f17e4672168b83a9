import MonitorRules
import ProbeRules
import Simulation
import TestTime
import Timekeeping
import XCTest

/// INTERFACE.md "Portal truth" in the simulated world: a network announcing its captive-portal API
/// (captive, open, malformed, hanging), a middlebox answering 204 to everything, a network dropping
/// HTTPS; the invariants (SimulationInvariants) hold in each, and the verdicts are the contract's.
final class PortalTruthScenarioTests: XCTestCase {
    func run(_ scenario: Scenario) -> Simulation {
        let simulation = Simulation(scenario)
        let violations = simulation.run()
        XCTAssertEqual(violations.map(\.description), [], "seed \(scenario.seed)")
        return simulation
    }

    func testTheAPIsWordMakesAndEndsAPortalAndABadAnswerNever() {
        let simulation = run(
            Scenario(
                seed: 31, settings: ProbeSettings(), duration: 20_000,
                timeline: [
                    (2_000, .api(.captive)), (6_000, .api(.open)), (10_000, .api(.malformed)), (14_000, .api(.hanging)),
                ]))
        let portals = simulation.summary.statuses.filter {
            $0.reason == "captive portal: sign in at https://portal.test/api-login"
        }
        XCTAssertEqual(portals.count, 1, "\(simulation.summary.statuses)")
        // Asked at once on the announcement: a round trip (10 ms) after it.
        if let portal = portals.first { XCTAssertLessThanOrEqual(portal.at, 2_050_000_000) }
        // Asked every 2 s while captive: the portal ends within 2 s and a round trip of the API opening.
        let back = simulation.summary.statuses.first { $0.at > 6_000_000_000 && $0.status.isConnected }
        XCTAssertNotNil(back, "\(simulation.summary.statuses)")
        if let back { XCTAssertLessThanOrEqual(back.at, 8_020_000_000) }
        XCTAssertEqual(simulation.state.connectivity, .full)
    }

    func testWithTheEchoAMiddleboxIsNeverFull() {
        var scenario = Scenario(
            seed: 32, settings: ProbeSettings(), duration: 30_000,
            timeline: [
                (0, .check(.intercepted)), (15_000, .check(.expected(milliseconds: 20))),
            ])
        scenario.checkURL = true
        scenario.checkEcho = true
        let simulation = run(scenario)
        let before = simulation.summary.statuses.filter { $0.at < 15_000_000_000 }
        XCTAssertFalse(before.contains { $0.status.isConnected }, "\(before)")
        XCTAssertTrue(before.contains { $0.reason.contains("answered without the echo (intercepted)") }, "\(before)")
        XCTAssertEqual(simulation.state.connectivity, .full, "the real server's echo, once the middlebox is gone")
        // Without the echo the middlebox passes: the hole the echo closes.
        scenario.checkEcho = false
        XCTAssertTrue(run(scenario).summary.statuses.contains { $0.at < 15_000_000_000 && $0.status.isConnected })
    }

    func testHTTPSBlockedIsLimitedAndPartial() {
        var scenario = Scenario(
            seed: 33, settings: ProbeSettings(), duration: 40_000,
            timeline: [
                (0, .check(.httpsBlocked)), (20_000, .check(.expected(milliseconds: 20))),
            ])
        scenario.checkURL = true
        scenario.secureCheck = true
        let simulation = run(scenario)
        let before = simulation.summary.statuses.filter { $0.at < 20_000_000_000 }
        XCTAssertFalse(before.contains { $0.status.isConnected }, "\(before)")
        XCTAssertTrue(
            before.contains { $0.reason.hasPrefix("HTTPS fails on this network: https://check.test/generate_204") },
            "\(before)")
        XCTAssertEqual(simulation.state.connectivity, .full)
    }

    /// Many random runs with the portal faults in them: the invariants hold, and the faults were met.
    func testRandomRunsWithPortalFaultsKeepTheInvariants() {
        var met = 0
        for seed in UInt64(1)...400 {
            let scenario = Scenario.random(seed: seed &* 7919)
            let portalFaults = scenario.timeline.filter {
                switch $0.fault {
                case .api, .check(.intercepted), .check(.httpsBlocked): true
                default: false
                }
            }
            guard !portalFaults.isEmpty else { continue }
            met += 1
            let simulation = Simulation(scenario)
            let violations = simulation.run()
            XCTAssertEqual(violations.map(\.description), [], "seed \(scenario.seed)")
            if !violations.isEmpty { break }
        }
        XCTAssertGreaterThan(met, 200)
    }
}
