import MonitorRules
import NetAddress
import TestTime
import Timekeeping
import XCTest

/// INTERFACE.md "DNS truth", without sockets: when fresh lookups and interception queries are asked,
/// what their answers make of `Dns`, and the budget they keep.
final class DnsTruthCoreTests: XCTestCase {
    func core(host: String = "example.test", literal: Bool = false, zone: String = "") -> DnsTruthCore {
        DnsTruthCore(host: host, hostIsLiteral: literal, family: .any, zone: zone, seed: 7)
    }

    func asked(_ core: inout DnsTruthCore) -> [DnsQuestion] {
        core.takeOutputs().compactMap {
            if case .ask(let question, _) = $0 { return question }
            return nil
        }
    }

    func reply(_ outcome: DnsOutcome, rtt: Duration = 12 * ms, transport: DnsTransport = .udp) -> DnsReply {
        DnsReply(
            outcome: outcome, server: "198.18.9.1", transport: transport, roundTrip: rtt, resolvers: ["198.18.9.1"])
    }

    let address = IPAddress("198.18.5.5")!

    func testStartAsksHostAndInterceptionAndAHealthyAnswerIsOk() {
        var dns = core()
        dns.start(network: "veth0", now: 0 * second)
        let questions = asked(&dns)
        XCTAssertEqual(questions.map(\.kind), [.host, .interception])
        XCTAssertEqual(questions[0].name, "example.test")
        XCTAssertTrue(questions[1].name.hasSuffix(".invalid."))
        XCTAssertEqual(questions[1].name.count, 16 + ".invalid.".count)
        dns.answered(.host, generation: 0, reply(.addresses([address])), now: 12 * ms)
        dns.answered(.interception, generation: 0, reply(.nxdomain), now: 14 * ms)
        XCTAssertEqual(dns.view.health, .ok)
        XCTAssertEqual(dns.view.server, "198.18.9.1")
        XCTAssertEqual(dns.view.transport, .udp)
        XCTAssertEqual(dns.view.roundTripTime, 12_000)
    }

    func testTwoFailedLookupsInARowFailRetryingAfterFiveSecondsUntilOneSucceeds() {
        var dns = core()
        dns.connectivityFull(true, now: 0 * second)
        dns.start(network: "veth0", now: 0 * second)
        _ = asked(&dns)
        dns.answered(.interception, generation: 0, reply(.nxdomain), now: 10 * ms)
        dns.answered(.host, generation: 0, reply(.noAnswer("timed out")), now: 5 * second)
        XCTAssertNotEqual(dns.view.health, .failing, "one failure is not an outage")
        XCTAssertEqual(
            asked(&dns).map(\.kind), [.host], "one per 5 s start to start: a lookup that timed out goes again at once")
        dns.answered(.host, generation: 0, reply(.servfail), now: 5 * second + 3 * ms)
        XCTAssertEqual(dns.view.health, .failing)
        XCTAssertEqual(dns.nextWakeup, 10 * second)
        dns.timeout(now: 10 * second)
        XCTAssertEqual(asked(&dns).map(\.kind), [.host])
        dns.answered(.host, generation: 0, reply(.servfail), now: 10 * second + 3 * ms)
        XCTAssertEqual(dns.view.health, .failing)
        XCTAssertEqual(
            dns.view.failure, "DNS fails: new lookups of example.test: SERVFAIL (cached answers may still work)")
        dns.timeout(now: 15 * second + 3 * ms)
        XCTAssertEqual(asked(&dns).map(\.kind), [.host])
        dns.answered(.host, generation: 0, reply(.addresses([address])), now: 15 * second + 5 * ms)
        XCTAssertEqual(dns.view.health, .ok)
        XCTAssertNil(dns.view.failure)
        XCTAssertEqual(dns.nextWakeup, 15 * second + 5 * ms + DnsTruthCore.refresh, "every 5 minutes while full")
    }

    func testNXDOMAINForHostFailsButIsTheProbeZonesExpectedAnswer() {
        var dns = core(zone: "probe.example.test.")
        dns.start(network: "veth0", now: 0 * second)
        let questions = asked(&dns)
        XCTAssertEqual(questions.map(\.kind), [.host, .probeZone, .interception])
        XCTAssertTrue(questions[1].name.hasSuffix(".probe.example.test."))
        dns.answered(.host, generation: 0, reply(.addresses([address])), now: 1 * ms)
        dns.answered(.probeZone, generation: 0, reply(.nxdomain), now: 2 * ms)
        XCTAssertEqual(dns.failures, 0)
        // A caching resolver with a dead upstream: Host from its cache, the random label gets nothing.
        dns.lookAgain(now: 10 * second)
        XCTAssertEqual(asked(&dns).map(\.kind), [.host, .probeZone])
        dns.answered(.host, generation: 0, reply(.addresses([address])), now: 10 * second)
        dns.answered(.probeZone, generation: 0, reply(.servfail), now: 10 * second)
        dns.timeout(now: 15 * second)
        XCTAssertEqual(asked(&dns).map(\.kind), [.host, .probeZone])
        dns.answered(.host, generation: 0, reply(.addresses([address])), now: 15 * second)
        dns.answered(.probeZone, generation: 0, reply(.noAnswer("timed out")), now: 20 * second)
        XCTAssertEqual(dns.view.health, .failing)
    }

    func testAnAddressForANameThatCannotExistIsInterceptionWhichNeverFails() {
        var dns = core()
        dns.start(network: "veth0", now: 0 * second)
        _ = asked(&dns)
        dns.answered(.host, generation: 0, reply(.addresses([address])), now: 1 * ms)
        dns.answered(.interception, generation: 0, reply(.addresses([IPAddress("198.18.0.9")!])), now: 2 * ms)
        XCTAssertEqual(dns.view.health, .intercepted)
        XCTAssertNil(dns.view.failure)
        XCTAssertEqual(dns.deadline(.interception), 2 * ms + DnsTruthCore.interceptionRefresh, "hourly")
    }

    func testALiteralHostHasOnlyTheInterceptionQueryUnlessAZoneIsSet() {
        var dns = core(host: "198.18.5.5", literal: true)
        dns.start(network: "veth0", now: 0 * second)
        XCTAssertEqual(asked(&dns).map(\.kind), [.interception])
        XCTAssertEqual(dns.view.health, .unknown)
        dns.answered(.interception, generation: 0, reply(.nxdomain), now: 3 * ms)
        XCTAssertEqual(dns.view.health, .ok)
        XCTAssertEqual(
            dns.nextWakeup, (3 * ms as Instant) + DnsTruthCore.interceptionRefresh, "nothing but the hourly query")
        dns.settingsChanged(host: "198.18.5.5", hostIsLiteral: true, family: .any, zone: "zone.test", now: 1 * second)
        XCTAssertEqual(asked(&dns).map(\.kind), [.probeZone], "the interception answer stands: the network is the same")
        dns.answered(.probeZone, generation: dns.generation, reply(.servfail), now: 1 * second)
        dns.timeout(now: 6 * second)
        _ = asked(&dns)
        dns.answered(.probeZone, generation: dns.generation, reply(.servfail), now: 6 * second)
        XCTAssertEqual(
            dns.view.failure,
            "DNS fails: new lookups of names under zone.test: SERVFAIL (cached answers may still work)")
    }

    func testOpportunisticFallbackIsUnencryptedAndTLSIsNot() {
        var dns = core()
        dns.start(network: "wlan0", now: 0 * second)
        _ = asked(&dns)
        var plain = reply(.addresses([address]), transport: .unknown)
        plain.server = "resolved"
        plain.encryptionExpected = true
        dns.answered(.host, generation: 0, plain, now: 1 * ms)
        XCTAssertEqual(dns.view.health, .unencrypted)
        dns.lookAgain(now: 10 * second)
        _ = asked(&dns)
        var secure = plain
        secure.transport = .tls
        dns.answered(.host, generation: 0, secure, now: 10 * second)
        XCTAssertEqual(dns.view.health, .ok)
        XCTAssertEqual(dns.view.transport, .tls)
    }

    func testSlowAnswersAreSlow() {
        var dns = core()
        dns.start(network: "veth0", now: 0 * second)
        _ = asked(&dns)
        dns.answered(.host, generation: 0, reply(.addresses([address]), rtt: 1_500 * ms), now: 1_500 * ms)
        XCTAssertEqual(dns.view.health, .slow)
    }

    /// The budget: the service's own schedule is one fresh lookup per 5 minutes while ok; what triggers one
    /// (a route change, resume, the host falling silent) never starts two closer than 5 s, however often it
    /// comes; the interception query once per network change, then hourly.
    func testTriggersNeverAskFasterThanTheBudget() {
        var dns = core()
        dns.connectivityFull(true, now: 0 * second)
        dns.start(network: "veth0", now: 0 * second)
        var fresh = 0
        var interception = 0
        var now: Instant = 0 * second
        func count(_ dns: inout DnsTruthCore, _ now: Instant) {
            for question in asked(&dns) {
                if question.kind == .interception {
                    interception += 1
                    dns.answered(.interception, generation: dns.generation, reply(.nxdomain), now: now)
                } else {
                    fresh += 1
                    dns.answered(.host, generation: dns.generation, reply(.addresses([address])), now: now)
                }
            }
        }
        count(&dns, now)
        for step in 1...600 {
            now = UInt64(step) * second
            dns.lookAgain(now: now)
            if let due = dns.nextWakeup, due <= now { dns.timeout(now: now) }
            count(&dns, now)
        }
        XCTAssertEqual(fresh, 1 + 600 / 5, "a trigger every second: one lookup per 5 s at most")
        XCTAssertEqual(interception, 1)
    }

    /// Issue 54 N31: Sets of Host or DnsProbeZone each started a fresh lookup and the interception query at once
    /// (15,882 queries in 10 s). However many Sets come, no two fresh lookups start closer than `retry`.
    func testSetsNeverAskFasterThanTheBudget() {
        var dns = core()
        dns.start(network: "veth0", now: 0)
        var questions = asked(&dns).count
        for step in 1...1000 {
            let now: Instant = UInt64(step) * 10 * ms
            dns.settingsChanged(
                host: "host\(step % 7).test", hostIsLiteral: false, family: .any,
                zone: step % 2 == 0 ? "zone.test" : "", now: now)
            if let due = dns.nextWakeup, due <= now { dns.timeout(now: now) }
            questions += asked(&dns).count
        }
        // 10 s of Sets: a round (Host's name and the zone's label) and the interception query per 5 s at most.
        XCTAssertLessThanOrEqual(questions, 3 * (1 + 10_000 / 5_000), "\(questions) questions in 10 s")
        XCTAssertGreaterThan(questions, 2, "a Set still asks once the budget allows")
    }

    func testARouteOntoAnotherNetworkAsksInterceptionAgainAndStaleAnswersAreIgnored() {
        var dns = core()
        dns.start(network: "veth0", now: 0 * second)
        _ = asked(&dns)
        dns.answered(.interception, generation: 0, reply(.addresses([address])), now: 1 * ms)
        XCTAssertEqual(dns.view.health, .intercepted)
        dns.routeChanged(network: "wlan0", now: 10 * second)
        let questions = asked(&dns)
        XCTAssertEqual(questions.map(\.kind), [.interception], "the host lookup is still under way")
        dns.answered(.interception, generation: 0, reply(.nxdomain), now: 10 * second)
        XCTAssertEqual(dns.view.health, .unknown)
        dns.settingsChanged(host: "other.test", hostIsLiteral: false, family: .any, zone: "", now: 11 * second)
        _ = asked(&dns)
        dns.answered(.host, generation: 0, reply(.servfail), now: 11 * second)
        dns.answered(.host, generation: 0, reply(.servfail), now: 11 * second)
        XCTAssertEqual(dns.failures, 0, "answers for the old Host are not the new one's")
    }
}
