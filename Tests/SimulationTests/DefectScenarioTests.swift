import MonitorRules
import ProbeRules
import Simulation
import TestTime
import Timekeeping
import XCTest

/// The defects of the engines issue, each as a scenario on the virtual clock: the rule
/// the old engines broke is asserted here, besides the invariants every run checks.
final class DefectScenarioTests: XCTestCase {
    private func run(_ scenario: Scenario, file: StaticString = #filePath, line: UInt = #line) -> Simulation {
        let simulation = Simulation(scenario)
        for violation in simulation.run() { XCTFail("\(violation)", file: file, line: line) }
        return simulation
    }

    private func firstTime(_ simulation: Simulation, _ status: Status, after: Instant = .origin) -> Instant? {
        simulation.summary.statuses.first { $0.status == status && $0.at >= after }?.at
    }

    /// 1: Checks share the probe in flight and force at most one probe per Timeout.
    func testAFloodOfChecksForcesAtMostOneProbePerTimeout() {
        let settings = ProbeSettings(intervalMilliseconds: 10_000, timeoutMilliseconds: 1000)
        let simulation = run(
            Scenario(
                seed: 1, settings: settings, duration: 4_000,
                timeline: [
                    (0, .behaviour(.answering(minRTT: 1, maxRTT: 2, loss: 0))),
                    (1_000, .checks(count: 2_000, spreadMilliseconds: 2_000)),
                ]))
        XCTAssertEqual(simulation.summary.checks, 2_000)
        // 2 s of Checks at Timeout 1 s: at most three forced probes (at the start of each Timeout).
        XCTAssertLessThanOrEqual(simulation.summary.forcedProbes, 3)
        XCTAssertGreaterThanOrEqual(simulation.summary.forcedProbes, 1)
        // Interval 10 s over 4 s: the first probe and the one when the route is first known, plus the forced ones.
        XCTAssertLessThanOrEqual(simulation.summary.probesSent, 2 + simulation.summary.forcedProbes)
        XCTAssertLessThanOrEqual(simulation.summary.longestCheckWait, 2_000_000_000)
    }

    /// 2: an overrun that swallows the answer to a route lookup does not freeze the verdict:
    /// the lookup is asked again once the table is whole, and a later link loss is noticed.
    func testAnOverrunThatLosesTheLookupAnswerDoesNotFreezeTheVerdict() {
        let simulation = run(
            Scenario(
                seed: 2, settings: ProbeSettings(), duration: 6_000,
                timeline: [
                    (1_000, .overrunWhileLookingUp),
                    (1_000, .route(2, present: false)),
                    (3_000, .linkUp(3, false)),
                ]))
        XCTAssertGreaterThan(simulation.summary.overruns, 0)
        let wifi = firstTime(simulation, .wifi)
        XCTAssertNotNil(wifi, "the route over wlan0 was noticed after the overrun: \(simulation.summary.statuses)")
        let none = firstTime(simulation, .none, after: 3_000_000_000)
        XCTAssertNotNil(none, "the link loss after the overrun was noticed")
        if let none { XCTAssertLessThan(none.duration(since: 3 * second), 1 * ms, "at once, not by probes") }
        XCTAssertEqual(simulation.state.status, .none)
    }

    /// 3: a new Host never waits for lookups of earlier ones that hang.
    func testANewHostNeverWaitsForStaleLookups() {
        var timeline: [(at: UInt64, fault: Scenario.Fault)] = (0..<8).map { (1_000 + UInt64($0), .host("hang.test")) }
        timeline.append((1_010, .host("198.18.0.2")))
        let simulation = run(Scenario(seed: 3, settings: ProbeSettings(), duration: 1_040, timeline: timeline))
        XCTAssertEqual(simulation.state.address, "198.18.0.2")
        XCTAssertEqual(simulation.state.status, .ethernet, simulation.state.reason)
    }

    /// 5: an Unreachable that quotes only the header (forgeable by anyone who knows identifier and
    /// sequence) is one failed probe, not a refusal.
    func testAForgedShortUnreachableIsOneFailureNotARefusal() {
        let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 3)
        let simulation = run(
            Scenario(
                seed: 5, settings: settings, duration: 4_000,
                timeline: [
                    (1_500, .behaviour(.answering(minRTT: 400, maxRTT: 400, loss: 0))),
                    (2_001, .forgeries(count: 1)),
                ]))
        XCTAssertNil(firstTime(simulation, .none), "\(simulation.summary.statuses)")
        XCTAssertEqual(simulation.state.status, .ethernet)
    }

    /// 5, the other side: an Unreachable quoting the whole probe is the network saying no, at once.
    func testAnUnreachableQuotingTheWholeProbeRefusesAtOnce() {
        let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 3)
        let simulation = run(
            Scenario(
                seed: 5, settings: settings, duration: 3_000,
                timeline: [(1_500, .behaviour(.unreachable(wholeQuote: true)))]))
        let none = firstTime(simulation, .none)
        XCTAssertNotNil(none)
        // That probe is at 2 s, or up to a sixteenth of the Interval later while the schedule moves onto its grid.
        if let none { XCTAssertLessThan(none, 2_163_000_000, "the first probe after 1.5 s (at ~2 s) decided") }
    }

    /// 7: a Check whose probe cannot be sent (the route went, the engine has not read it yet)
    /// is answered at once, not after Timeout.
    func testACheckWhoseProbeCannotBeSentIsAnsweredAtOnce() {
        let settings = ProbeSettings(intervalMilliseconds: 10_000, timeoutMilliseconds: 5_000)
        let simulation = run(
            Scenario(
                seed: 7, settings: settings, duration: 2_000,
                timeline: [
                    (1_000, .route(2, present: false)),
                    (1_000, .route(3, present: false)),
                    (1_000, .checks(count: 1, spreadMilliseconds: 0)),
                ]))
        XCTAssertEqual(simulation.summary.checks, 1)
        XCTAssertEqual(simulation.summary.longestCheckWait, 0)
        XCTAssertEqual(simulation.state.status, .none)
    }

    /// 8: probes in flight together are one failure: Interval = Timeout = 500, threshold 4, a
    /// silent host: not before (4 − 1) × 500 + 500 = 2,000 ms after the first unanswered probe.
    func testProbesInFlightTogetherAreOneFailure() {
        let settings = ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 500, failureThreshold: 4)
        let simulation = run(
            Scenario(
                seed: 8, settings: settings, duration: 6_000,
                timeline: [
                    (1_000, .behaviour(.answering(minRTT: 5, maxRTT: 5, loss: 0))),
                    (2_001, .behaviour(.silent)),
                ]))
        let none = firstTime(simulation, .none)
        XCTAssertNotNil(none)
        // The first unanswered probe went out after 2.001 s.
        if let none { XCTAssertGreaterThanOrEqual(none, 2_001_000_000 + 2_000_000_000) }
    }

    /// 8: Time Exceeded is answered by the network: no suspicion re-probe, so FailureThreshold
    /// answers take about (FailureThreshold − 1) × Interval.
    func testTimeExceededWaitsForTheIntervalBetweenFailures() {
        let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 3)
        let simulation = run(
            Scenario(
                seed: 8, settings: settings, duration: 6_000,
                timeline: [(1_500, .behaviour(.timeExceeded))]))
        let none = firstTime(simulation, .none)
        XCTAssertNotNil(none)
        // Probes at 2, 3 and 4 s are answered with Time Exceeded 2 ms later.
        if let none { XCTAssertGreaterThanOrEqual(none, 4_000_000_000) }
    }

    /// The same seed gives the same run.
    func testARunIsReproducibleFromItsSeed() {
        let first = Simulation(Scenario.random(seed: 42)), second = Simulation(Scenario.random(seed: 42))
        first.run()
        second.run()
        XCTAssertEqual(first.summary.events, second.summary.events)
        XCTAssertEqual(first.summary.probesSent, second.summary.probesSent)
        XCTAssertEqual(first.summary.statuses.map(\.status), second.summary.statuses.map(\.status))
        XCTAssertEqual(first.summary.statuses.map(\.at), second.summary.statuses.map(\.at))
    }

    // MARK: When the network is at its worst (issue 19)

    /// 4: DNS health is retried every 5 s while the known address answers: `limited` ends within
    /// 5 s of the resolver's repair (backing off to 60 s, it outlived the repair by up to a minute).
    func testLimitedByABrokenResolverEndsWithin5SecondsOfItsRepair() {
        var scenario = Scenario(
            seed: 4, settings: ProbeSettings(), duration: 40_000,
            timeline: [
                (1_500, .resolver(.failing("SERVFAIL"))),
                (25_000, .resolver(.answering)),
            ])
        scenario.dnsRefreshMilliseconds = 1_000
        let simulation = run(scenario)
        let limited = simulation.summary.statuses.first {
            $0.status == .none && $0.reason.contains("no longer resolves")
        }
        XCTAssertNotNil(
            limited, "two failed lookups while the address answered made it limited: \(simulation.summary.statuses)")
        let back = simulation.summary.statuses.first { $0.status == .ethernet && $0.at > 25_000_000_000 }
        XCTAssertNotNil(back, "\(simulation.summary.statuses)")
        if let back { XCTAssertLessThanOrEqual(back.at.duration(since: 25 * second), 5_031 * ms) }
    }

    /// 5: a hung lookup fails only after glibc's own timeout; the address it had keeps being probed,
    /// and a slow resolver delays nothing but the lookup.
    func testAHungOrSlowResolverNeverTakesTheKnownAddressAway() {
        var scenario = Scenario(
            seed: 5, settings: ProbeSettings(), duration: 30_000,
            timeline: [
                (1_500, .resolver(.hanging)),
                (12_000, .resolver(.slow(milliseconds: 4_000))),
                (20_000, .resolver(.answering)),
            ])
        scenario.dnsRefreshMilliseconds = 1_000
        let simulation = run(scenario)
        XCTAssertEqual(simulation.state.status, .ethernet, simulation.state.reason)
        XCTAssertFalse(
            simulation.summary.statuses.contains { $0.reason.contains("not answering") },
            "\(simulation.summary.statuses)")
    }

    /// 6: a check server that accepts and never answers: the check ends at its limit (5 s), and
    /// Connectivity is `limited` then, not `unknown` for as long as the server keeps quiet.
    func testACheckThatNeverAnswersEndsAtItsLimit() {
        var scenario = Scenario(
            seed: 6, settings: ProbeSettings(), duration: 40_000,
            timeline: [
                (0, .check(.hanging)),
                (20_000, .check(.expected(milliseconds: 30))),
            ])
        scenario.checkURL = true
        let simulation = run(scenario)
        // Status is `unknown` ("checking …") from the start until the first check ends: the host
        // answers within its first second, so the limit ends the check by 6 s.
        let limited = simulation.summary.statuses.first { $0.reason.contains("timed out") }
        XCTAssertNotNil(limited, "\(simulation.summary.statuses)")
        if let limited { XCTAssertLessThanOrEqual(limited.at, 6_100_000_000) }
        // Retried every 10 s while failing (each retry may take the whole limit): the repair at 20 s is seen by 31 s.
        let full = simulation.summary.statuses.first { $0.status == .ethernet && $0.at > 20_000_000_000 }
        XCTAssertNotNil(full, "\(simulation.summary.statuses)")
        if let full { XCTAssertLessThanOrEqual(full.at, 31_100_000_000) }
        XCTAssertEqual(simulation.state.connectivity, .full)
    }

    /// 7: a captive portal and signing in, through the same core the daemon drives.
    func testAPortalAndSigningIn() {
        var scenario = Scenario(
            seed: 7, settings: ProbeSettings(), duration: 25_000,
            timeline: [
                (0, .check(.portal)),
                (8_000, .check(.expected(milliseconds: 10))),
            ])
        scenario.checkURL = true
        let simulation = run(scenario)
        XCTAssertTrue(
            simulation.summary.statuses.contains { $0.reason.contains("captive portal") },
            "\(simulation.summary.statuses)")
        XCTAssertEqual(simulation.state.connectivity, .full)
    }

    /// 2: a router that drops echo requests and REJECTs TCP 443 (its ICMP Port Unreachable reads as
    /// ECONNREFUSED) never answers for a host that says nothing, whether TCP is the probe or the
    /// ladder beside ICMP: only the probed host's SYN-ACK or RST answers.
    func testARejectingRouterNeverAnswersForASilentHost() {
        for method in [ProbeMethod.tcp, .icmpDatagram] {
            var scenario = Scenario(
                seed: 19, settings: ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 500),
                duration: 8_000, timeline: [(2_000, .behaviour(.icmpFiltered(rtt: 5, tcp: .rejectedByRouter)))])
            scenario.probeMethod = method
            let simulation = run(scenario)
            XCTAssertEqual(
                firstTime(simulation, .ethernet).map { $0 < 2_000_000_000 }, true, "\(method): answering at first")
            let none = firstTime(simulation, .none, after: 2_000_000_000)
            XCTAssertNotNil(none, "\(method): \(simulation.summary.statuses)")
            XCTAssertNil(
                firstTime(simulation, .ethernet, after: none ?? .origin), "\(method): \(simulation.summary.statuses)")
            XCTAssertEqual(simulation.state.status, .none, "\(method)")
        }
    }

    /// 2, the other side: the host's own RST is an answer (nothing listens on 443, but the host is there).
    func testTheHostsOwnResetAnswersATCPProbe() {
        var scenario = Scenario(
            seed: 19, settings: ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 500),
            duration: 8_000, timeline: [(0, .behaviour(.icmpFiltered(rtt: 5, tcp: .resets)))])
        scenario.probeMethod = .tcp
        let simulation = run(scenario)
        XCTAssertEqual(simulation.summary.statuses.map(\.status), [.ethernet], "\(simulation.summary.statuses)")
        XCTAssertEqual(simulation.state.probeMethod, "tcp")
    }

    /// 3: ten restored targets whose names never resolve (glibc gives up after 5 to 10 s each) share
    /// the resolver with the default target, started before it: its lookup goes first, so it waits
    /// at most for the one lookup under way, at start and after its Host changes (one thread served
    /// them in the order asked: about a minute).
    func testTargetsThatNeverResolveDoNotHoldUpTheDefaultTarget() {
        var scenario = Scenario(
            seed: 3, settings: ProbeSettings(), duration: 45_000, timeline: [(20_000, .host("b.test"))])
        scenario.extraTargets = Array(repeating: "hang.test", count: 10)
        let simulation = run(scenario)
        let first = firstTime(simulation, .ethernet)
        XCTAssertNotNil(first, "\(simulation.summary.statuses)")
        if let first { XCTAssertLessThanOrEqual(first, 10_100_000_000, "behind one hung lookup at most") }
        let again = simulation.summary.statuses.first { $0.status == .ethernet && $0.at > 20_000_000_000 }
        XCTAssertNotNil(again, "\(simulation.summary.statuses)")
        if let again { XCTAssertLessThanOrEqual(again.at, 30_100_000_000, "behind one hung lookup at most") }
        XCTAssertEqual(simulation.state.address, "198.18.1.2")
        // They take their turns on the one thread, 5 to 10 s each, in the order asked.
        XCTAssertEqual(simulation.extraStates.count, 10)
        for state in simulation.extraStates {
            XCTAssertTrue([.none, .unknown].contains(state.status), "\(state.status)")
            XCTAssertTrue(
                ["cannot resolve hang.test: no answer", "resolving hang.test"].contains(state.reason), state.reason)
        }
        XCTAssertGreaterThanOrEqual(simulation.extraStates.filter { $0.status == .none }.count, 3)
    }

    /// Targets that resolve share the resolver and the route core with the default one, each to its own address.
    func testEveryTargetResolvesThroughTheSharedResolver() {
        var scenario = Scenario(seed: 30, settings: ProbeSettings(), duration: 12_000, timeline: [])
        scenario.extraTargets = ["b.test", "a.test", "fail.test", "198.18.1.2"]
        let simulation = run(scenario)
        XCTAssertEqual(simulation.state.status, .ethernet)
        XCTAssertEqual(simulation.extraStates.map(\.address), ["198.18.1.2", "198.18.0.2", "", "198.18.1.2"])
        XCTAssertEqual(simulation.extraStates.map(\.status), [.ethernet, .ethernet, .none, .ethernet])
    }
}
