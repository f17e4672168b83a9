import MonitorRules
import NetAddress
import ProbeRules
import Simulation
import TestTime
import Timekeeping
import XCTest

/// Every path on the virtual clock: a dual-stack Host whose families fail and come back on a
/// schedule, through the daemon's driver; each run checks the headline's invariants.
final class DualStackScenarioTests: XCTestCase {
    let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 2)

    private func run(
        _ faults: [DualStackRun.Fault], seconds: UInt64, seed: UInt64 = 1, order: [IPFamily] = [.v6, .v4],
        file: StaticString = #filePath, line: UInt = #line
    ) -> DualStackRun.Figures {
        let figures = DualStackRun(
            settings: settings, seed: seed, order: order, faults: faults,
            durationMilliseconds: seconds * 1000
        ).run()
        for violation in figures.violations { XCTFail(violation, file: file, line: line) }
        return figures
    }

    /// A family blackholed and restored every 30 s for 10 minutes: not one headline transition.
    func testAFlappingFamilyMovesNoHeadline() {
        for family in IPFamily.allCases {
            let faults = stride(from: 30_000, to: 600_000, by: 60_000).flatMap {
                [
                    DualStackRun.Fault(atMilliseconds: UInt64($0), family, .blackhole),
                    DualStackRun.Fault(atMilliseconds: UInt64($0 + 30_000), family, .restore),
                ]
            }
            let figures = run(faults, seconds: 600)
            XCTAssertEqual(figures.headlineTransitions, 0, "\(family)")
            XCTAssertEqual(figures.statusChanges, 0, "\(family)")
        }
    }

    /// A family's route lost and regained: the same.
    func testAFamilysRouteComingAndGoingMovesNoHeadline() {
        let faults = stride(from: 10_000, to: 300_000, by: 20_000).flatMap {
            [
                DualStackRun.Fault(atMilliseconds: UInt64($0), .v6, .routeLost),
                DualStackRun.Fault(atMilliseconds: UInt64($0 + 10_000), .v6, .routeBack),
            ]
        }
        let figures = run(faults, seconds: 300)
        XCTAssertEqual(figures.headlineTransitions, 0)
    }

    /// Every family blackholed: one transition down, one up once one family answers again.
    func testADeadUpstreamIsOneTransitionEachWay() {
        let figures = run(
            [
                .init(atMilliseconds: 20_000, .v4, .blackhole), .init(atMilliseconds: 20_000, .v6, .blackhole),
                .init(atMilliseconds: 40_000, .v4, .restore),
            ], seconds: 60)
        XCTAssertEqual(figures.headlineTransitions, 2)
    }

    /// One family blackholed from the start: the first full comes as soon as with both healthy.
    func testADeadFamilyFromTheStartDoesNotDelayTheFirstFull() throws {
        let healthy = try XCTUnwrap(run([], seconds: 10).firstFull)
        for family in IPFamily.allCases {
            let oneDead = try XCTUnwrap(run([.init(atMilliseconds: 0, family, .blackhole)], seconds: 10).firstFull)
            XCTAssertLessThanOrEqual(
                Double(oneDead.nanoseconds), Double(healthy.nanoseconds) * 1.1 + 25e6,
                "\(family) dead: \(oneDead), healthy: \(healthy)")
        }
    }

    /// While both are full, the family not giving the headline is probed once per 30 s at most.
    func testTheOtherFamilyCostsOneProbePer30Seconds() {
        let figures = run([], seconds: 600)
        let seconds = Double(figures.allFull.nanoseconds) / 1e9
        XCTAssertGreaterThan(seconds, 590)
        XCTAssertLessThanOrEqual(
            Double(figures.probesWhileAllFull[.v4] ?? 0), seconds / 30 + 2, "\(figures.probesWhileAllFull)")
        XCTAssertGreaterThanOrEqual(Double(figures.probesWhileAllFull[.v6] ?? 0), seconds - 2)
    }

    /// Random schedules of every fault kind: the invariants hold throughout.
    func testRandomFamilyFaultsKeepTheInvariants() {
        var random = SeededRandom(seed: 30)
        for seed in 0..<200 as Range<UInt64> {
            var faults: [DualStackRun.Fault] = []
            for _ in 0..<12 {
                let kinds: [DualStackRun.FaultKind] = [
                    .blackhole, .restore, .routeLost, .routeBack,
                    .nat64Prefix(lifetimeSeconds: random.next() % 40),
                ]
                faults.append(
                    .init(
                        atMilliseconds: random.next() % 120_000, random.next() % 2 == 0 ? .v4 : .v6,
                        kinds[Int(random.next() % 5)]))
            }
            let order: [IPFamily] = random.next() % 2 == 0 ? [.v4, .v6] : [.v6, .v4]
            _ = run(faults.sorted { $0.at < $1.at }, seconds: 150, seed: seed, order: order)
        }
    }

    /// IPv4's route gone on a network whose router advertises a NAT64 prefix: IPv4 is full through it;
    /// when the prefix's lifetime ends, IPv4 is none (no route), and the headline stays with IPv6.
    func testIPv4ThroughAnAdvertisedPrefixUntilItsLifetimeEnds() {
        let run = DualStackRun(
            settings: settings, seed: 5,
            faults: [
                .init(atMilliseconds: 5_000, .v6, .nat64Prefix(lifetimeSeconds: 30)),
                .init(atMilliseconds: 10_000, .v4, .routeLost),
            ], durationMilliseconds: 30_000)
        var figures = run.run()
        for violation in figures.violations { XCTFail(violation) }
        XCTAssertEqual(run.state.ipv4.connectivity, .full)
        XCTAssertEqual(run.state.ipv4Path, .nat64)
        XCTAssertEqual(run.state.nat64Source, .ra)
        XCTAssertEqual(figures.headlineTransitions, 0)

        let expiring = DualStackRun(
            settings: settings, seed: 5,
            faults: [
                .init(atMilliseconds: 5_000, .v6, .nat64Prefix(lifetimeSeconds: 20)),
                .init(atMilliseconds: 10_000, .v4, .routeLost),
            ], durationMilliseconds: 40_000)
        figures = expiring.run()
        for violation in figures.violations { XCTFail(violation) }
        XCTAssertEqual(expiring.state.nat64Prefix, "")
        XCTAssertEqual(expiring.state.ipv4.connectivity, .none)
        XCTAssertEqual(expiring.state.connectivity, .full)
    }
}
