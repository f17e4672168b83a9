import MonitorRules
import NetAddress
import ProbeRules
import Simulation
import TestTime
import Timekeeping
import XCTest

/// Every path on the virtual clock: a dual-stack Host whose families fail and come back on a
/// schedule, in the one simulated world (its kernel carries both families, their routes and the
/// routers' NAT64 prefix), through the daemon's drivers; every run checks the headline's invariants
/// with the rest (the headline never below the best family, the first probes together, the prefix).
final class DualStackScenarioTests: XCTestCase {
    let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 2)

    private func run(
        _ timeline: [(at: UInt64, fault: Scenario.Fault)], seconds: UInt64, seed: UInt64 = 1,
        order: [IPFamily] = [.v6, .v4], file: StaticString = #filePath, line: UInt = #line
    ) -> Simulation {
        let simulation = Simulation(
            .dualStack(seed: seed, settings: settings, order: order, seconds: seconds, timeline: timeline))
        for violation in simulation.run() { XCTFail("\(violation)", file: file, line: line) }
        return simulation
    }

    /// A family blackholed and restored every 30 s for 10 minutes: not one headline transition.
    func testAFlappingFamilyMovesNoHeadline() {
        for family in IPFamily.allCases {
            let timeline = stride(from: 30_000, to: 600_000, by: 60_000).flatMap {
                [
                    (UInt64($0), Scenario.Fault.blackhole(family, true)),
                    (UInt64($0 + 30_000), .blackhole(family, false)),
                ]
            }
            let headline = run(timeline, seconds: 600).headline
            XCTAssertNotNil(headline.firstFull)
            XCTAssertEqual(headline.transitions, 0, "\(family)")
            XCTAssertEqual(headline.statusChanges, 0, "\(family)")
        }
    }

    /// A family's routes lost and regained: the same.
    func testAFamilysRouteComingAndGoingMovesNoHeadline() {
        for family in IPFamily.allCases {
            let timeline = stride(from: 10_000, to: 300_000, by: 20_000).flatMap {
                [
                    (UInt64($0), Scenario.Fault.familyRoutes(family, present: false)),
                    (UInt64($0 + 10_000), .familyRoutes(family, present: true)),
                ]
            }
            XCTAssertEqual(run(timeline, seconds: 300).headline.transitions, 0, "\(family)")
        }
    }

    /// Every family blackholed: one transition down, one up once one family answers again.
    func testADeadUpstreamIsOneTransitionEachWay() {
        let simulation = run(
            [(20_000, .blackhole(.v4, true)), (20_000, .blackhole(.v6, true)), (40_000, .blackhole(.v4, false))],
            seconds: 60)
        XCTAssertEqual(simulation.headline.transitions, 2)
        XCTAssertEqual(simulation.state.connectivity, .full)
        XCTAssertEqual(simulation.state.ipv6.connectivity, .limited, simulation.state.ipv6.reason)
    }

    /// One family blackholed from the start: the first full comes as soon as with both healthy.
    func testADeadFamilyFromTheStartDoesNotDelayTheFirstFull() throws {
        let healthy = try XCTUnwrap(run([], seconds: 10).headline.firstFull)
        for family in IPFamily.allCases {
            let oneDead = try XCTUnwrap(run([(0, .blackhole(family, true))], seconds: 10).headline.firstFull)
            XCTAssertLessThanOrEqual(
                Double(oneDead.nanoseconds), Double(healthy.nanoseconds) * 1.1 + 25e6,
                "\(family) dead: \(oneDead), healthy: \(healthy)")
        }
    }

    /// While both are full, the family not giving the headline is probed once per 30 s at most.
    func testTheOtherFamilyCostsOneProbePer30Seconds() {
        for order: [IPFamily] in [[.v6, .v4], [.v4, .v6]] {
            let headline = run([], seconds: 600, order: order).headline
            let seconds = Double(headline.allFull.nanoseconds) / 1e9
            XCTAssertGreaterThan(seconds, 590)
            XCTAssertLessThanOrEqual(
                Double(headline.probesWhileAllFull[order[1]] ?? 0), seconds / 30 + 2, "\(headline.probesWhileAllFull)")
            XCTAssertGreaterThanOrEqual(Double(headline.probesWhileAllFull[order[0]] ?? 0), seconds - 2)
        }
    }

    /// Random schedules of every family fault: the invariants hold throughout.
    func testRandomFamilyFaultsKeepTheInvariants() {
        var random = SeededRandom(seed: 30)
        for seed in 0..<200 as Range<UInt64> {
            var timeline: [(at: UInt64, fault: Scenario.Fault)] = []
            for _ in 0..<12 {
                let family: IPFamily = random.next() % 2 == 0 ? .v4 : .v6
                let on = random.next() % 2 == 0
                let faults: [Scenario.Fault] = [
                    .blackhole(family, on), .familyRoutes(family, present: on),
                    .nat64Prefix(lifetimeSeconds: UInt32(random.next() % 48)),
                ]
                timeline.append((random.next() % 120_000, faults[Int(random.next() % 3)]))
            }
            let order: [IPFamily] = random.next() % 2 == 0 ? [.v4, .v6] : [.v6, .v4]
            _ = run(timeline, seconds: 150, seed: seed, order: order)
        }
    }

    /// IPv4's routes gone on a network whose routers advertise a NAT64 prefix: IPv4 is full through it;
    /// when the prefix's lifetime ends, IPv4 is none (no route), and the headline stays with IPv6.
    func testIPv4ThroughAnAdvertisedPrefixUntilItsLifetimeEnds() {
        let through = run(
            [(5_000, .nat64Prefix(lifetimeSeconds: 40)), (10_000, .familyRoutes(.v4, present: false))], seconds: 30)
        XCTAssertEqual(through.state.ipv4.connectivity, .full, through.state.ipv4.reason)
        XCTAssertEqual(through.state.ipv4Path, .nat64)
        XCTAssertEqual(through.state.nat64Source, .ra)
        XCTAssertEqual(through.state.nat64Prefix, "64:ff9b::/96")
        XCTAssertEqual(through.headline.transitions, 0)

        // 16 s (RFC 8781 counts in units of 8 s) from 5 s: gone at 21 s.
        let expiring = run(
            [(5_000, .nat64Prefix(lifetimeSeconds: 16)), (10_000, .familyRoutes(.v4, present: false))], seconds: 40)
        XCTAssertEqual(expiring.state.nat64Prefix, "")
        XCTAssertEqual(expiring.state.ipv4.connectivity, .none, expiring.state.ipv4.reason)
        XCTAssertEqual(expiring.state.connectivity, .full)
        XCTAssertEqual(expiring.headline.transitions, 0)
    }

    /// Random scenarios pick a dual-stack network too, and there both families are probed.
    func testRandomScenariosWatchBothFamiliesOnADualStackNetwork() {
        var dualStack = 0
        for seed in 1...300 as ClosedRange<UInt64> {
            let scenario = Scenario.random(seed: seed)
            guard scenario.family == .any else { continue }
            dualStack += 1
            guard dualStack <= 20 else { continue }
            let simulation = Simulation(scenario)
            XCTAssertEqual(simulation.run().map(\.description), [])
            XCTAssertGreaterThan(simulation.headline.probes[.v4] ?? 0, 0, "seed \(seed)")
            XCTAssertGreaterThan(simulation.headline.probes[.v6] ?? 0, 0, "seed \(seed)")
        }
        XCTAssertGreaterThan(dualStack, 60, "about a third of random scenarios are dual stack")
    }

    /// A family whose route comes back while a round of Checks waits does not hold that round's Checks past their
    /// two Timeouts (seed 11772 of the bench's 20,000): the round waits for the families probing when it began.
    func testAFamilyBackMidRoundHoldsNoCheckPastItsLimit() {
        let simulation = run(
            [
                (2_000, .familyRoutes(.v6, present: false)),
                // A Check answered at once, so the next one's forced probe waits a Timeout for its slot.
                (2_900, .checks(count: 1, spreadMilliseconds: 0)),
                (2_950, .blackhole(.v4, true)),
                (3_000, .checks(count: 1, spreadMilliseconds: 0)),
                // IPv6 back, silent, while the round waits for IPv4's deferred probe (lost at 4.9 s); a later Check.
                (4_400, .blackhole(.v6, true)),
                (4_400, .familyRoutes(.v6, present: true)),
                (4_500, .checks(count: 1, spreadMilliseconds: 0)),
            ], seconds: 8)
        XCTAssertEqual(simulation.summary.checks, 3)
        XCTAssertLessThanOrEqual(simulation.summary.longestCheckWait, 2 * settings.timeout)
    }
}
