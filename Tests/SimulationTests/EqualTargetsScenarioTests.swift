import MonitorRules
import ProbeRules
import Simulation
import XCTest

/// Issue "one driver, equal targets": the simulation runs every target as the daemon does, each
/// with the whole world — the ladder, the check, traffic, the diagnosis — and every rule checked
/// for each. These pin that no target is special: what the world does, every target sees.
final class EqualTargetsScenarioTests: XCTestCase {
    private static let hosts = ["b.test", "a.test", "198.18.1.2"]

    private func run(_ scenario: Scenario, file: StaticString = #filePath, line: UInt = #line) -> [MonitorState] {
        var scenario = scenario
        scenario.extraTargets = Self.hosts
        let simulation = Simulation(scenario)
        if ProcessInfo.processInfo.environment["SIMULATION_TRACE"] != nil { simulation.trace = { print($0) } }
        for violation in simulation.run() { XCTFail("\(violation)", file: file, line: line) }
        XCTAssertEqual(simulation.extraStates.count, Self.hosts.count, file: file, line: line)
        return [simulation.state] + simulation.extraStates
    }

    /// ICMP filtered and the host answering TCP: every target climbs the ladder; with traffic flowing
    /// to remotes routed like each Host, every target says so.
    func testEveryTargetClimbsTheLadderAndSeesTraffic() {
        let states = run(
            Scenario(
                seed: 41, settings: ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 500),
                duration: 8_000,
                timeline: [
                    (500, .behaviour(.icmpFiltered(rtt: 5, tcp: .accepts))),
                    (500, .traffic(.steady(remotes: 3))),
                ]))
        for (number, state) in states.enumerated() {
            XCTAssertEqual(state.connectivity, .full, "target \(number): \(state.reason)")
            XCTAssertEqual(state.probeMethod, "tcp", "target \(number)")
            XCTAssertEqual(state.traffic, .flowing, "target \(number)")
        }
    }

    /// A portal intercepting the check from the moment the link comes back (another network): every
    /// target runs its own check there and says `portal`.
    func testEveryTargetRunsTheCheck() {
        var scenario = Scenario(
            seed: 42, settings: ProbeSettings(), duration: 8_000,
            timeline: [
                (1_000, .check(.portal)),
                (1_000, .carrier(2, false)),
                (1_500, .carrier(2, true)),
            ])
        scenario.checkURL = true
        for (number, state) in run(scenario).enumerated() {
            XCTAssertEqual(state.connectivity, .portal, "target \(number): \(state.reason)")
            XCTAssertEqual(state.portalURL, "http://portal.test/login", "target \(number)")
        }
    }

    /// The gateway stops answering its neighbours and forwarding: every target's diagnosis finds it.
    func testEveryTargetFindsWhereItBroke() {
        let states = run(
            Scenario(
                seed: 43, settings: ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 500),
                duration: 8_000, timeline: [(2_000, .gateway(arp: false))]))
        for (number, state) in states.enumerated() {
            XCTAssertNotEqual(state.connectivity, .full, "target \(number)")
            XCTAssertEqual(state.blame, .gateway, "target \(number): \(state.reason)")
            XCTAssertEqual(state.neighbor, .unreachable, "target \(number)")
        }
    }
}
