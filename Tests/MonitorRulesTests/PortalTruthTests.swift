import MonitorRules
import NetAddress
import ProbeRules
import ReachabilityRules
import XCTest

/// INTERFACE.md "Portal truth" in the pure rules: the echo, the plain and secure checks combined,
/// and the network's API in the verdict (none wins, then portal from the API, then the check's).
final class PortalTruthTests: XCTestCase {
    let plain = "http://check.example/generate_204"
    let secure = "https://check.example/generate_204"
    let nonce = "00112233445566778899aabbccddeeff"

    func testOnlyA204EchoingTheNonceIsExpected() {
        XCTAssertEqual(CheckAnswer(status: 204, echo: nonce).meaning(checkURL: plain, nonce: nonce), .expected)
        XCTAssertEqual(CheckAnswer(status: 204).meaning(checkURL: plain, nonce: nonce), .intercepted)
        XCTAssertEqual(CheckAnswer(status: 204, echo: "0011").meaning(checkURL: plain, nonce: nonce), .intercepted)
        XCTAssertEqual(
            CheckAnswer(status: 200).meaning(checkURL: plain, nonce: nonce), .intercepted, "an empty 200 from anyone")
        XCTAssertEqual(
            CheckAnswer(status: 302, location: "http://portal.example/").meaning(checkURL: plain, nonce: nonce),
            .portal("http://portal.example/"), "a redirect is still a portal")
        XCTAssertEqual(CheckAnswer(status: 511).meaning(checkURL: plain, nonce: nonce), .portal(plain))
        // Without the echo asked, nothing changes.
        XCTAssertEqual(CheckAnswer(status: 204).meaning(checkURL: plain), .expected)
    }

    func testThePlainAndTheSecureCheckCombine() {
        func combine(_ p: CheckAnswer.Meaning?, _ s: CheckAnswer.Meaning?) -> CheckAnswer.Meaning {
            CheckAnswer.combine(plainURL: plain, plain: p, secureURL: secure, secure: s)
        }
        XCTAssertEqual(combine(.expected, .expected), .expected)
        XCTAssertEqual(
            combine(.expected, .failed("timed out")),
            .limited(reason: "HTTPS fails on this network: \(secure): timed out", partial: true))
        XCTAssertEqual(
            combine(.portal("http://portal.example/"), .failed("the server's certificate is not trusted")),
            .portal("http://portal.example/"))
        XCTAssertEqual(combine(.failed("HTTP 500"), .expected), .failed("HTTP 500"))
        XCTAssertEqual(
            combine(.intercepted, .expected),
            .limited(reason: "check \(plain): answered without the echo (intercepted)", partial: false))
        XCTAssertEqual(
            combine(.intercepted, nil),
            .limited(reason: "check \(plain): answered without the echo (intercepted)", partial: false))
        XCTAssertEqual(combine(.expected, nil), .expected)
        // Alone, the secure check decides: its expected answer is full, anything else limited (never a portal).
        XCTAssertEqual(combine(nil, .expected), .expected)
        XCTAssertEqual(
            combine(nil, .failed("connection refused or unreachable")),
            .limited(reason: "check \(secure) failed: connection refused or unreachable", partial: false))
        guard case .limited(_, false) = combine(nil, .portal(secure)) else {
            return XCTFail("a redirect inside TLS is no portal")
        }
    }

    let address = IPAddress("198.18.2.2")!
    let route = ReachabilityVerdict(usable: true, interface: "wlan0", kind: .wifi, source: "198.18.0.2")

    func state(
        route: ReachabilityVerdict?, answering: Bool? = true, check: CheckAnswer.Meaning? = nil, checkURL: String = "",
        api: PortalAPIFacts? = nil
    ) -> MonitorState {
        let link = api.map {
            LinkView(id: LinkID(index: 3, generation: 1), name: "wlan0", facts: LinkFacts(portalAPI: $0))
        }
        return StatusRules.state(
            host: "server.test", resolution: .resolved(address), route: route,
            probe: ProbeReport(answering: answering), link: link,
            beyond: BeyondTheHost(checkURL: checkURL, check: check), previous: MonitorState())
    }

    func testTheNetworksAPIMakesAPortalBeforeAnyCheck() {
        let captive = PortalAPIFacts(
            uri: "https://api.example/",
            answer: CapportAnswer(
                captive: true, userPortalURL: "https://portal.example/login", venueInfoURL: "https://venue.example/",
                secondsRemaining: 30))
        let s = state(route: route, answering: nil, check: .expected, checkURL: plain, api: captive)
        XCTAssertEqual(s.connectivity, .portal)
        XCTAssertEqual(s.portalURL, "https://portal.example/login")
        XCTAssertEqual(s.reason, "captive portal: sign in at https://portal.example/login")
        XCTAssertEqual(s.portalAPI, "https://api.example/")
        XCTAssertEqual(s.portalVenueURL, "https://venue.example/")
        XCTAssertEqual(s.portalSecondsRemaining, 30)
        XCTAssertFalse(s.reachable)
        // The API's portal goes before the check's.
        XCTAssertEqual(
            state(route: route, check: .portal("http://other.example/"), checkURL: plain, api: captive).portalURL,
            "https://portal.example/login")
        // None wins.
        XCTAssertEqual(
            state(route: ReachabilityVerdict(usable: false, interface: "wlan0", reason: "no carrier"), api: captive)
                .connectivity, .none)
    }

    func testAnAPIThatIsNotCaptiveOrSaidNothingLeavesTheVerdictToTheProbes() {
        for api in [
            PortalAPIFacts(uri: "https://api.example/", answer: CapportAnswer(captive: false, secondsRemaining: 600)),
            PortalAPIFacts(uri: "https://api.example/", answer: nil),
            PortalAPIFacts(uri: "http://api.example/", answer: nil),
        ] {
            let s = state(route: route, api: api)
            XCTAssertEqual(s.connectivity, .full, "\(api)")
            XCTAssertEqual(s.portalAPI, api.uri)
            XCTAssertEqual(s.portalURL, "")
        }
        // Another interface's API is not this route's.
        var other = route
        other.interface = "eth0"
        XCTAssertEqual(state(route: other, api: PortalAPIFacts(uri: "https://api.example/")).portalAPI, "")
    }

    func testPartialAndInterceptedAreLimited() {
        let partial = state(
            route: route, check: .limited(reason: "HTTPS fails on this network: \(secure): timed out", partial: true),
            checkURL: plain)
        XCTAssertEqual(partial.connectivity, .limited)
        XCTAssertTrue(partial.partial)
        XCTAssertEqual(partial.reason, "HTTPS fails on this network: \(secure): timed out")
        XCTAssertEqual(partial.status, .none)
        let intercepted = state(route: route, check: .intercepted, checkURL: plain)
        XCTAssertEqual(intercepted.connectivity, .limited)
        XCTAssertFalse(intercepted.partial)
        XCTAssertEqual(intercepted.reason, "check \(plain): answered without the echo (intercepted)")
        XCTAssertFalse(state(route: route, check: .expected, checkURL: plain).partial)
    }
}
