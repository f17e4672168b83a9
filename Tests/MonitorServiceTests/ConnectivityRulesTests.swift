import DaemonWorlds
import HTTPCheck
import MonitorRules
@testable import MonitorService
import NetAddress
import NetCore
import Probe
import ProbeRules
import Reachability
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// Connectivity, pure: what a CheckURL is, what an answer means, when the check
/// runs, DNS health, and how Status and Reason follow Connectivity.
final class ConnectivityRulesTests: XCTestCase {
    func testCheckURLAcceptsPlainHTTPURLsOnly() throws {
        for good in [
            "", "http://connectivity.test/generate_204", "http://198.18.2.2/", "http://198.18.2.2:8080/a/b?c=d&e=%20",
            "http://[fd00:2::2]/generate_204", "http://[fd00::1]:80", "http://example.test", "http://a.b.c.",
        ] {
            XCTAssertTrue(CheckURL.isValid(good), good)
            var settings = MonitorSettings()
            try settings.set(.checkURL, text: good)
            XCTAssertEqual(settings.checkURL, good)
        }
        let long = "http://h.test/" + String(repeating: "a", count: 1024 - 14)
        XCTAssertTrue(CheckURL.isValid(long))
        for bad in [
            "https://h.test/", "HTTP://h.test/", "ftp://h.test", "http://", "http:///path", "http://user@h.test/",
            "http://h.test:0/", "http://h.test:65536/", "http://h.test:/", "http://h.test:80a/", "http://-h.test/",
            "http://h .test/", "http://h.test/a b", "http://h.test/#frag", "http://[fe80::1%25eth0]/",
            "http://[nonsense]/",
            "http://256.1.1.1/", "http://h.test/\u{7}", "http://h.test/ü", long + "a", "h.test/generate_204",
        ] {
            XCTAssertFalse(CheckURL.isValid(bad), bad)
            var settings = MonitorSettings()
            XCTAssertThrowsError(try settings.set(.checkURL, text: bad)) { error in
                XCTAssertTrue((error as? SettingError)?.message.hasPrefix("CheckURL: ") == true)
            }
            XCTAssertEqual(settings.checkURL, "")
        }
    }

    func testWhatAnAnswerMeans() {
        let url = "http://check.test/generate_204"
        let cases: [(CheckAnswer, CheckAnswer.Meaning)] = [
            (CheckAnswer(status: 204), .expected),
            (CheckAnswer(status: 200), .expected),
            (CheckAnswer(status: 200, bodyBytes: 120), .portal(url)),
            (
                CheckAnswer(status: 302, location: "http://portal.test/login?x=1"),
                .portal("http://portal.test/login?x=1")
            ),
            (CheckAnswer(status: 301, location: "https://portal.test/"), .portal("https://portal.test/")),
            (CheckAnswer(status: 303, location: ""), .portal(url)),
            (CheckAnswer(status: 307, location: "javascript:alert(1)"), .portal(url)),
            (CheckAnswer(status: 308, location: "http://portal.test/\u{1b}[31m"), .portal(url)),
            (
                CheckAnswer(status: 308, location: "http://portal.test/" + String(repeating: "x", count: 3000)),
                .portal(url)
            ),
            (CheckAnswer(status: 511), .portal(url)),
            (CheckAnswer(status: 511, location: "http://portal.test/"), .portal("http://portal.test/")),
            (CheckAnswer(status: 500), .failed("HTTP 500")),
            (CheckAnswer(status: 404), .failed("HTTP 404")),
            (CheckAnswer(status: 0), .failed("no HTTP answer")),
            (CheckAnswer(transportError: "timed out"), .failed("timed out")),
            (CheckAnswer(transportError: "timed out", status: 302, location: "http://p.test/"), .failed("timed out")),
            (CheckAnswer(transportError: "the connection failed", status: 200, bodyBytes: 10), .portal(url)),
        ]
        for (answer, meaning) in cases {
            XCTAssertEqual(answer.meaning(checkURL: url), meaning, "\(answer)")
        }
    }

    func testTheCheckRunsWhenItShouldAndNoMore() {
        var check = PortalCheck()
        XCTAssertEqual(check.trigger(newNetwork: true, now: 0), [], "off: nothing runs")
        XCTAssertEqual(check.setURL("http://c.test/", now: 0), [.start(url: "http://c.test/", generation: 1)])
        XCTAssertNil(check.meaning)
        // A stale answer is ignored.
        XCTAssertFalse(check.answered(generation: 7, .expected, now: 1))
        XCTAssertTrue(check.answered(generation: 1, .expected, now: 1 * second))
        XCTAssertEqual(check.meaning, .expected)
        XCTAssertEqual(check.nextAt, 1 * second + PortalCheck.refresh)
        XCTAssertEqual(check.handleTimeout(now: 2 * second), [])
        let refresh: Instant = 1 * second + PortalCheck.refresh
        XCTAssertEqual(check.handleTimeout(now: refresh), [.start(url: "http://c.test/", generation: 2)])
        XCTAssertTrue(check.answered(generation: 2, .portal("http://p.test/"), now: refresh + 1 * second))
        XCTAssertEqual(check.nextAt, refresh + 1 * second + PortalCheck.retry)
        // The host stopped answering: again at once, the answer kept meanwhile.
        XCTAssertEqual(
            check.trigger(newNetwork: false, now: refresh + 3 * second), [.start(url: "http://c.test/", generation: 3)])
        XCTAssertEqual(check.meaning, .portal("http://p.test/"))
        // A new network while one runs: cancelled, forgotten, started again.
        XCTAssertEqual(
            check.trigger(newNetwork: true, now: refresh + 5 * second),
            [.cancel, .start(url: "http://c.test/", generation: 4)])
        XCTAssertNil(check.meaning)
        XCTAssertTrue(check.answered(generation: 4, .failed("HTTP 500"), now: refresh + 6 * second))
        XCTAssertEqual(check.nextAt, refresh + 6 * second + PortalCheck.retry)
        XCTAssertEqual(check.setURL("", now: refresh + 7 * second), [])
        XCTAssertNil(check.nextAt)
        XCTAssertEqual(check.handleTimeout(now: .distantFuture), [])
    }

    /// However many Sets of CheckURL or host flaps, checks start at most `burst` at once, then once a second.
    func testAFloodOfReasonsStartsAtMostOneCheckASecond() {
        var check = PortalCheck()
        var starts = 0
        func count(_ actions: [PortalCheck.Action]) {
            starts += actions.filter { if case .start = $0 { true } else { false } }.count
        }
        for i in 0..<10_000 {
            let now: Instant = UInt64(i) * ms // 10 s of one reason per millisecond
            count(
                i % 2 == 0
                    ? check.setURL("http://c\(i % 3).test/", now: now) : check.trigger(newNetwork: i % 5 == 0, now: now)
            )
            if let at = check.nextAt, at <= now { count(check.handleTimeout(now: now)) }
        }
        XCTAssertLessThanOrEqual(starts, PortalCheck.burst + 10)
        XCTAssertGreaterThanOrEqual(starts, 9, "the last reason is still looked at within a second")
        XCTAssertNotNil(check.nextAt ?? (check.running.map { _ in 0 }), "a start is due or under way")
    }

    let address = IPAddress("198.18.2.2")!
    let route = ReachabilityVerdict(usable: true, interface: "c0", kind: .ethernet, source: "198.18.0.2")

    func state(
        route: ReachabilityVerdict?, answering: Bool?, _ beyond: BeyondTheHost, resolution: Resolution? = nil
    ) -> MonitorState {
        var probe = ProbeReport(answering: answering)
        probe.failure = answering == false ? .silent(.lost, probes: 2) : nil
        return StatusRules.state(
            host: "h.test", resolution: resolution ?? .resolved(address), route: route, probe: probe,
            beyond: beyond, previous: MonitorState())
    }

    func testConnectivityAndWhatStatusAndReasonSay() {
        let off = BeyondTheHost()
        var s = state(route: route, answering: true, off)
        XCTAssertEqual([s.connectivity.rawValue, s.status.rawValue, s.reason], ["full", "ethernet", ""])
        s = state(route: route, answering: false, off)
        XCTAssertEqual(
            [s.connectivity.rawValue, s.status.rawValue, s.reason],
            ["limited", "none", "host not answering: 2 probes lost"])
        s = state(route: ReachabilityVerdict(usable: false, reason: "no route to 198.18.2.2"), answering: false, off)
        XCTAssertEqual([s.connectivity.rawValue, s.status.rawValue], ["none", "none"])
        s = state(route: route, answering: true, off, resolution: .failed("cannot resolve h.test: no address"))
        XCTAssertEqual([s.connectivity.rawValue, s.status.rawValue], ["none", "none"])
        s = state(route: route, answering: nil, off)
        XCTAssertEqual([s.connectivity.rawValue, s.status.rawValue], ["unknown", "unknown"])

        let url = "http://c.test/generate_204"
        s = state(route: route, answering: true, BeyondTheHost(checkURL: url))
        XCTAssertEqual(
            [s.connectivity.rawValue, s.status.rawValue, s.reason], ["unknown", "unknown", "checking \(url)"])
        s = state(route: route, answering: true, BeyondTheHost(checkURL: url, check: .expected))
        XCTAssertEqual([s.connectivity.rawValue, s.status.rawValue], ["full", "ethernet"])
        s = state(route: route, answering: true, BeyondTheHost(checkURL: url, check: .failed("HTTP 500")))
        XCTAssertEqual(
            [s.connectivity.rawValue, s.status.rawValue, s.reason],
            ["limited", "none", "check \(url) failed: HTTP 500"])
        // Portal beats limited (a silent host), but not none.
        for answering in [true, false] {
            s = state(
                route: route, answering: answering, BeyondTheHost(checkURL: url, check: .portal("http://p.test/")))
            XCTAssertEqual(
                [s.connectivity.rawValue, s.status.rawValue, s.portalURL, s.reason],
                ["portal", "none", "http://p.test/", "captive portal: sign in at http://p.test/"])
        }
        s = state(
            route: ReachabilityVerdict(usable: false, reason: "interface c0 is down"), answering: true,
            BeyondTheHost(checkURL: url, check: .portal("http://p.test/")))
        XCTAssertEqual([s.connectivity.rawValue, s.portalURL], ["none", ""])
        // DNS health: limited though the address answers; before a failed check's reason.
        s = state(
            route: route, answering: true,
            BeyondTheHost(
                checkURL: url, check: .failed("timed out"),
                resolverProblem: "host answers, but h.test no longer resolves: x"))
        XCTAssertEqual(
            [s.connectivity.rawValue, s.status.rawValue, s.reason],
            ["limited", "none", "host answers, but h.test no longer resolves: x"])
    }

    func testTwoFailedLookupsWhileTheAddressAnswersMakeItLimited() {
        var core = MonitorCore(host: "h.test", family: .any)
        core.start(now: 0)
        core.resolved(generation: 0, .success([address]), routedFamilies: nil, now: 0)
        core.routeChanged(route, now: 0)
        var answering = ProbeReport(answering: true)
        answering.answeredBy = .icmp
        core.probeReportChanged(from: ProbeReport(), to: answering, now: 1)
        XCTAssertEqual(core.state(previous: MonitorState()).connectivity, .full)
        XCTAssertEqual(core.state(previous: MonitorState()).probeMethod, "icmp")
        let failure = HostResolver.Failure(message: "cannot resolve h.test: Temporary failure in name resolution")
        core.resolved(generation: 0, .failure(failure), routedFamilies: nil, now: 2)
        XCTAssertEqual(core.state(previous: MonitorState()).connectivity, .full, "one failure is not enough")
        XCTAssertEqual(core.nextWakeup, 2 * ns + 5 * second, "retried after 5 s")
        core.resolved(generation: 0, .failure(failure), routedFamilies: nil, now: 3)
        var s = core.state(previous: MonitorState())
        XCTAssertEqual(
            [s.connectivity.rawValue, s.status.rawValue, s.reason],
            ["limited", "none", "host answers, but h.test no longer resolves: Temporary failure in name resolution"])
        // However long the resolver stays broken, it is asked again every 5 s (never backed off).
        for attempt in UInt64(1)...6 {
            core.resolved(generation: 0, .failure(failure), routedFamilies: nil, now: (3 + attempt) * ns)
            XCTAssertEqual(
                core.nextWakeup, (3 + attempt) * ns + 5 * second, "failure \(attempt + 2): retried after 5 s")
        }
        core.resolved(generation: 0, .success([address]), routedFamilies: nil, now: 40)
        s = core.state(previous: MonitorState())
        XCTAssertEqual([s.connectivity.rawValue, s.status.rawValue], ["full", "ethernet"])
        // Failures while the host is silent do not count.
        core.probeReportChanged(from: answering, to: ProbeReport(answering: false), now: 45)
        core.resolved(generation: 0, .failure(failure), routedFamilies: nil, now: 46)
        core.resolved(generation: 0, .failure(failure), routedFamilies: nil, now: 47)
        core.probeReportChanged(from: ProbeReport(answering: false), to: answering, now: 48)
        XCTAssertEqual(core.failedLookupsWhileAnswering, 0)
        XCTAssertEqual(core.state(previous: MonitorState()).connectivity, .full)
    }

    func testTheCheckFollowsTheHostAndTheRoute() {
        var core = MonitorCore(host: "198.18.2.2", family: .any)
        core.start(now: 0)
        core.checkURLChanged("http://c.test/", now: 0)
        XCTAssertFalse(
            core.takeOutputs().contains { if case .startCheck = $0 { true } else { false } },
            "no address yet: nothing to check over")
        core.resolved(generation: 0, .success([address]), routedFamilies: nil, now: 1 * second)
        XCTAssertTrue(
            core.takeOutputs().contains(.startCheck(url: "http://c.test/", generation: 1)), "an address: check")
        core.checkAnswered(generation: 1, .expected, now: 1 * second)
        core.routeChanged(route, now: 2 * second)
        XCTAssertTrue(
            core.takeOutputs().contains(.startCheck(url: "http://c.test/", generation: 2)), "a route: check again")
        core.checkAnswered(generation: 2, .expected, now: 2 * second + 1 * ns)
        core.probeReportChanged(from: ProbeReport(), to: ProbeReport(answering: true), now: 3 * second)
        XCTAssertTrue(core.takeOutputs().contains(.startCheck(url: "http://c.test/", generation: 3)))
        core.probeReportChanged(from: ProbeReport(answering: true), to: ProbeReport(answering: true), now: 4 * second)
        XCTAssertFalse(core.takeOutputs().contains { if case .startCheck = $0 { true } else { false } })
        core.checkAnswered(generation: 3, .portal("http://p.test/"), now: 5 * second)
        XCTAssertEqual(core.nextWakeup, 5 * second + PortalCheck.retry)
        core.handleTimeout(now: 5 * second + PortalCheck.retry)
        XCTAssertTrue(core.takeOutputs().contains(.startCheck(url: "http://c.test/", generation: 4)))
        // The host flaps, each check answering before the next flap: two more checks at once (the burst),
        // the third waits for the next second.
        let then: Instant = 5 * second + PortalCheck.retry
        var generation: UInt64 = 4
        var starts: [MonitorCore.Output] = []
        for (i, answering) in [false, true, false].enumerated() {
            core.checkAnswered(generation: generation, .failed("refused"), now: then + UInt64(i + 1) * ns)
            core.probeReportChanged(
                from: ProbeReport(answering: !answering), to: ProbeReport(answering: answering),
                now: then + UInt64(i + 1) * ns)
            let started = core.takeOutputs().filter { if case .startCheck = $0 { true } else { false } }
            if case .startCheck(_, let new)? = started.last { generation = new }
            starts += started
        }
        XCTAssertEqual(
            starts,
            [.startCheck(url: "http://c.test/", generation: 5), .startCheck(url: "http://c.test/", generation: 6)])
        XCTAssertEqual(core.nextWakeup, then + 1 * second)
        core.handleTimeout(now: then + 1 * second)
        XCTAssertTrue(core.takeOutputs().contains(.startCheck(url: "http://c.test/", generation: 7)))
    }

    /// At start the check runs once: the first route the kernel reports and the host's first answer find it under
    /// way on that network and leave it (each start opens a connection; three were seen, two closed unused). A
    /// route that moves while it runs starts it over: its answer would be about the old network.
    func testAtStartTheCheckRunsOnceAndAMoveStartsItOver() {
        var core = MonitorCore(host: "198.18.2.2", family: .any)
        core.start(now: 0)
        core.checkURLChanged("http://c.test/", now: 0)
        core.resolved(generation: 0, .success([address]), routedFamilies: nil, now: 1)
        core.routeChanged(route, now: 2)
        core.probeReportChanged(from: ProbeReport(), to: ProbeReport(answering: true), now: 3)
        let checks = core.takeOutputs().filter {
            if case .startCheck = $0 { true } else if case .cancelCheck = $0 { true } else { false }
        }
        XCTAssertEqual(checks, [.startCheck(url: "http://c.test/", generation: 1)])
        var moved = route
        moved.interface = "wlan0"
        core.routeChanged(moved, now: 4)
        let restarted = core.takeOutputs().filter {
            if case .startCheck = $0 { true } else if case .cancelCheck = $0 { true } else { false }
        }
        XCTAssertEqual(restarted, [.cancelCheck, .startCheck(url: "http://c.test/", generation: 2)])
    }
}
