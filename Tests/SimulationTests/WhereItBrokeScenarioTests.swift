import MonitorRules
import ProbeRules
import Simulation
import Timekeeping
import XCTest

/// INTERFACE.md "Where it broke" in the simulated world: gateways that die with or without their ARP,
/// an upstream past the gateway, a silent host, suspends announced or not; the invariants
/// (SimulatedGateway) hold in each, and Blame and the history are the contract's.
final class WhereItBrokeScenarioTests: XCTestCase {
    let settings = ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 500, failureThreshold: 2)

    func run(_ timeline: [(at: UInt64, fault: Scenario.Fault)], duration: UInt64 = 30_000) -> Simulation {
        let simulation = Simulation(Scenario(seed: 41, settings: settings, duration: duration, timeline: timeline))
        XCTAssertEqual(simulation.run().map(\.description), [])
        return simulation
    }

    func blames(_ simulation: Simulation) -> [String] { simulation.outages.map(\.blame) }

    func testEachFaultIsBlamedWhereItIs() {
        let simulation = run(
            [
                (2_000, .gateway(arp: false)), (6_000, .heal),
                (10_000, .gateway(arp: true)), (14_000, .heal),
                (18_000, .upstreamDies), (22_000, .heal),
                (24_000, .behaviour(.silent)), (28_000, .heal),
            ], duration: 32_000)
        XCTAssertEqual(
            blames(simulation), ["gateway", "upstream", "upstream", "host"],
            "a gateway answering ARP but forwarding nothing is upstream, never gateway")
        XCTAssertEqual(simulation.state.connectivity, .full)
        // Per diagnosis: three tries of the neighbour check at most, and one probe past the gateway.
        XCTAssertLessThanOrEqual(simulation.probesPastTheGateway, 4 + 4)
    }

    func testALinkDownIsBlamedAtOnceAndWithoutAsking() {
        let simulation = run(
            [(2_000, .carrier(2, false)), (2_001, .carrier(3, false)), (6_000, .heal)], duration: 12_000)
        XCTAssertEqual(blames(simulation), ["link"])
    }

    func testAnAnnouncedSleepWithTheUpstreamDeadMeanwhileIsNoOutage() {
        let simulation = run(
            [
                (2_000, .sleep(milliseconds: 5_000, announced: true)), (3_000, .upstreamDies), (6_000, .heal),
            ], duration: 12_000)
        XCTAssertEqual(simulation.outages, [], "the upstream died and came back while the machine slept")
        XCTAssertEqual(simulation.timeInState["asleep"], 5)
        XCTAssertEqual(simulation.timeInState.values.reduce(0, +), 12, "the values add up to the run")
    }

    func testAnOutageIsClosedAtSleepAndTheTimeAsleepIsInNoOutage() {
        let simulation = run(
            [
                (2_000, .upstreamDies), (6_000, .sleep(milliseconds: 60_000, announced: false)), (9_000, .heal),
            ], duration: 14_000)
        let outage = simulation.outages.first
        XCTAssertEqual(simulation.outages.count, 1)
        XCTAssertEqual(outage?.blame, "upstream")
        XCTAssertLessThan(outage?.duration ?? .forever, .seconds(8), "the minute asleep is no part of it")
        XCTAssertEqual(simulation.timeInState["asleep"], 60)
    }

    /// The daemon's rule, run by the simulation's service core: a jump of the boot clock over a second is a sleep,
    /// found before any target's next wake-up; a shorter one is none (the engines go on, their probes' answers
    /// taken as they come).
    func testAnUnannouncedSleepIsFoundFromTheBootClockBeforeAnyTargetWakes() {
        let simulation = run(
            [
                (2_000, .sleep(milliseconds: 900, announced: false)),
                (5_000, .sleep(milliseconds: 3_000, announced: false)),
            ],
            duration: 12_000)
        let found = simulation.summary.sleepsFound
        XCTAssertEqual(found.map(\.slept), [.seconds(3)], "0.9 s is no sleep; 3 s is")
        let at = found.first?.at ?? .distantFuture
        XCTAssertGreaterThanOrEqual(at, .origin + .seconds(5))
        XCTAssertLessThanOrEqual(
            at, .origin + .seconds(5) + .milliseconds(settings.intervalMilliseconds),
            "found at the first wake-up after it, within an Interval")
        XCTAssertEqual(simulation.timeInState["asleep"], 3)
        XCTAssertEqual(simulation.timeInState.values.reduce(0, +), 15, "the run's 12 s and the 3 s asleep")
        XCTAssertEqual(simulation.outages, [])
    }
}
