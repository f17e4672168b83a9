import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import XCTest

final class StatusRulesTests: XCTestCase {
    let address = IPAddress("198.18.2.2")!
    let route = ReachabilityVerdict(usable: true, interface: "c0", kind: .ethernet, source: "198.18.0.2")

    func state(_ resolution: Resolution, _ route: ReachabilityVerdict?, _ probe: ProbeReport) -> MonitorState {
        StatusRules.state(
            host: "server.test", resolution: resolution, route: route, probe: probe, previous: MonitorState())
    }

    func answering(_ answering: Bool?, failure: ProbeFailure? = nil, method: ProbeMethod = .icmpRaw) -> ProbeReport {
        var report = ProbeReport(answering: answering)
        report.failure = failure
        report.method = method
        report.roundTripMicroseconds = 420
        report.packetLoss = 0.05
        return report
    }

    func testConnectedNeedsARouteAndAnAnswer() {
        let s = state(.resolved(address), route, answering(true))
        XCTAssertEqual(s.status, .ethernet)
        XCTAssertEqual(s.interface, "c0")
        XCTAssertEqual(s.address, "198.18.2.2")
        XCTAssertEqual(s.reason, "")
        XCTAssertEqual(s.roundTripTime, 420)
        XCTAssertEqual(s.packetLoss, 0.05)
        for kind in InterfaceKind.allCases {
            var r = route
            r.kind = kind
            XCTAssertEqual(state(.resolved(address), r, answering(true)).status.rawValue, kind.rawValue)
        }
    }

    /// Gateway4/6: the next hop of the route to Host's address; none while Host has no address, none over an unusable route.
    func testTheGatewayIsTheNextHopOfTheRouteToHost() {
        var routed = route
        routed.gateway = IPAddress("198.18.0.1")
        XCTAssertEqual(state(.resolved(address), routed, answering(true)).gateway, "198.18.0.1")
        XCTAssertEqual(state(.resolved(address), route, answering(true)).gateway, "", "on-link")
        XCTAssertEqual(
            state(.pending, routed, answering(nil)).gateway, "", "no address yet: the default route is not Host's")
        XCTAssertEqual(state(.failed("no IPv6 address for server.test"), routed, answering(nil)).gateway, "")
        var down = routed
        down.usable = false
        XCTAssertEqual(state(.resolved(address), down, answering(false)).gateway, "")
    }

    func testNoRouteIsNoneWhateverTheProbesSay() {
        let lost = ReachabilityVerdict(usable: false, reason: "interface c0 is down")
        let s = state(.resolved(address), lost, answering(true))
        XCTAssertEqual(s.status, .none)
        XCTAssertEqual(s.reason, "interface c0 is down")
        XCTAssertEqual(s.interface, "")
    }

    func testHostNotAnsweringKeepsTheInterface() {
        let s = state(.resolved(address), route, answering(false, failure: .silent(.lost, probes: 2)))
        XCTAssertEqual(s.status, .none)
        XCTAssertEqual(s.interface, "c0", "the route exists while the host is silent")
        XCTAssertEqual(s.reason, "host not answering: 2 probes lost")
        let tcp = state(.resolved(address), route, answering(false, failure: .silent(.lost, probes: 2), method: .tcp))
        XCTAssertTrue(
            tcp.reason.hasSuffix("(probing with TCP connections to port 443: ICMP sockets are not permitted)"))
    }

    func testUnknownUntilTheFirstVerdict() {
        XCTAssertEqual(state(.pending, route, answering(nil)).status, .unknown)
        XCTAssertEqual(state(.pending, route, answering(nil)).reason, "resolving server.test")
        XCTAssertEqual(state(.resolved(address), nil, answering(nil)).status, .unknown)
        let waiting = state(.resolved(address), route, answering(nil))
        XCTAssertEqual(waiting.status, .unknown)
        XCTAssertEqual(waiting.reason, "waiting for the first answer from 198.18.2.2")
    }

    func testUnresolvableIsNoneWithTheResolverMessage() {
        let s = state(.failed("cannot resolve nowhere.invalid: Name or service not known"), route, answering(nil))
        XCTAssertEqual(s.status, .none)
        XCTAssertEqual(s.reason, "cannot resolve nowhere.invalid: Name or service not known")
        XCTAssertEqual(s.address, "")
    }
    /// The Connectivity the pace across families reads, found without text, is the one `update` writes,
    /// for every combination of resolution, route, answers, portal API, check and DNS health.
    func testConnectivityWithoutTextIsTheStates() {
        let resolutions: [Resolution] = [.pending, .failed("cannot resolve server.test"), .resolved(address)]
        var unusable = route
        unusable.usable = false
        let routes: [ReachabilityVerdict?] = [nil, route, unusable]
        let probes = [answering(nil), answering(true), answering(false, failure: .silent(.lost, probes: 2))]
        let c0 = LinkID(index: 2, generation: 1)
        let facts: [LinkView?] = [
            nil,
            LinkView(
                id: c0, name: "c0",
                facts: LinkFacts(
                    portalAPI: PortalAPIFacts(
                        uri: "https://api.test/",
                        answer: CapportAnswer(captive: true, userPortalURL: "https://p.test/")))),
            LinkView(
                id: c0, name: "c0",
                facts: LinkFacts(
                    portalAPI: PortalAPIFacts(uri: "https://api.test/", answer: CapportAnswer(captive: false)))),
        ]
        let checks: [CheckAnswer.Meaning?] = [
            nil, .expected, .portal("http://p.test/"), .failed("HTTP 500"), .intercepted,
            .limited(reason: "secure check failed", partial: true),
        ]
        var cases = 0
        for resolution in resolutions {
            for route in routes {
                for probe in probes {
                    for table in facts {
                        for checkURL in ["", "http://check.test/"] {
                            for check in checks {
                                for problem in [nil, "host answers, but server.test no longer resolves"] {
                                    let beyond = BeyondTheHost(
                                        checkURL: checkURL, check: check, resolverProblem: problem)
                                    let stated = StatusRules.state(
                                        host: "server.test", resolution: resolution, route: route, probe: probe,
                                        link: table, beyond: beyond, previous: MonitorState()
                                    ).connectivity
                                    let textless = StatusRules.connectivity(
                                        resolution: resolution, route: route, probe: probe,
                                        link: table, beyond: beyond)
                                    XCTAssertEqual(
                                        textless, stated,
                                        "\(resolution) \(String(describing: route)) \(probe) \(beyond)")
                                    cases += 1
                                }
                            }
                        }
                    }
                }
            }
        }
        XCTAssertEqual(cases, 3 * 3 * 3 * 3 * 2 * 6 * 2)
    }
}
