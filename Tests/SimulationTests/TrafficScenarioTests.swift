import MonitorRules
import ProbeRules
import Simulation
import TestTime
import Timekeeping
import XCTest

/// Traffic as evidence on the virtual clock: the contract's promises, besides the invariants every run checks.
final class TrafficScenarioTests: XCTestCase {
    private func run(_ scenario: Scenario, file: StaticString = #filePath, line: UInt = #line) -> Simulation {
        let simulation = Simulation(scenario)
        for violation in simulation.run() { XCTFail("\(violation)", file: file, line: line) }
        return simulation
    }

    private func firstTime(_ simulation: Simulation, _ status: Status, after: Instant) -> Instant? {
        simulation.summary.statuses.first { $0.status == status && $0.at >= after }?.at
    }

    /// A blackhole under traffic at Interval 30 s is confirmed as fast as at 1 s: within
    /// 1 s + 0.5 s + (F − 1) × min(Interval, Timeout) + Timeout = 3.5 s (without traffic, up to 32 s).
    func testAStallUnderTrafficConfirmsAnOutageWhateverTheInterval() {
        for evidence in [Evidence.probes, .traffic] {
            let settings = ProbeSettings(
                intervalMilliseconds: 30_000, timeoutMilliseconds: 1000, failureThreshold: 2, evidence: evidence)
            let simulation = run(
                Scenario(
                    seed: 3, settings: settings, duration: 20_000,
                    timeline: [
                        (0, .traffic(.steady(remotes: 3))),
                        (10_000, .behaviour(.silent)),
                    ]))
            let down = try? XCTUnwrap(firstTime(simulation, .none, after: 10_000_000_000))
            XCTAssertLessThanOrEqual((down ?? .distantFuture).duration(since: 10 * second), 3_500 * ms, "\(evidence)")
            XCTAssertGreaterThanOrEqual(simulation.summary.stalls, 1)
        }
        // Without traffic, the schedule alone: the next probe is up to 30 s away.
        let quiet = run(
            Scenario(
                seed: 3, settings: ProbeSettings(intervalMilliseconds: 30_000, timeoutMilliseconds: 1000),
                duration: 20_000, timeline: [(10_000, .behaviour(.silent))]))
        XCTAssertNil(firstTime(quiet, .none, after: 10_000_000_000))
    }

    /// Evidence `traffic` under steady traffic: no scheduled probe goes out, and they are counted as skipped.
    func testSteadyTrafficSkipsEveryScheduledProbe() {
        let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, evidence: .traffic)
        let simulation = run(
            Scenario(seed: 4, settings: settings, duration: 30_000, timeline: [(0, .traffic(.steady(remotes: 3)))]))
        // The first probes (start, route known) before the host answers; none after.
        XCTAssertLessThanOrEqual(simulation.summary.probesSent, 3)
        XCTAssertGreaterThanOrEqual(simulation.summary.probesSkipped, 27)
        XCTAssertEqual(simulation.state.probeMethod, "traffic")
        XCTAssertEqual(simulation.state.status, .ethernet)
    }

    /// Traffic to the local network only says nothing: every probe goes out.
    func testLocalTrafficSkipsNothing() {
        let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, evidence: .traffic)
        let simulation = run(
            Scenario(
                seed: 5, settings: settings, duration: 20_000, timeline: [(0, .traffic(.localOnly(connections: 12)))]))
        XCTAssertEqual(simulation.summary.probesSkipped, 0)
        XCTAssertGreaterThanOrEqual(simulation.summary.probesSent, 19)
    }

    /// Random loss that still lets data in, and connections closing one by one, change nothing.
    func testLossAndDyingConnectionsChangeNothing() {
        for traffic in [Scenario.TrafficBehaviour.lossy(remotes: 3), .dying(remotes: 3)] {
            let settings = ProbeSettings(intervalMilliseconds: 30_000, timeoutMilliseconds: 1000, evidence: .traffic)
            let simulation = run(
                Scenario(seed: 6, settings: settings, duration: 30_000, timeline: [(0, .traffic(traffic))]))
            XCTAssertEqual(simulation.summary.flips, 0, "\(traffic)")
            XCTAssertEqual(simulation.state.status, .ethernet, "\(traffic)")
            XCTAssertEqual(simulation.summary.stalls, 0, "\(traffic)")
        }
    }

    /// When skipped probes' traffic stops, a probe goes out at once and finds the silent host.
    func testProbesResumeWhenTrafficStops() {
        let settings = ProbeSettings(intervalMilliseconds: 30_000, timeoutMilliseconds: 1000, evidence: .traffic)
        let simulation = run(
            Scenario(
                seed: 7, settings: settings, duration: 80_000,
                timeline: [
                    (0, .traffic(.steady(remotes: 2))),
                    (40_000, .traffic(.none)),
                    (40_000, .behaviour(.silent)),
                ]))
        let down = firstTime(simulation, .none, after: 40_000_000_000)
        // The next sample (≤ 0.5 s) sees no traffic; one probe, a Timeout, its suspicion re-probe, a Timeout.
        XCTAssertLessThanOrEqual((down ?? .distantFuture).duration(since: 40 * second), 3 * second)
    }
}
