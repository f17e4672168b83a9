import MonitorRules
import NetAddress
import ProbeRules
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// Where it broke: Blame as a table over facts, the diagnosis's schedule (the neighbour check and the
/// one probe past the gateway), and the two composed in a path, all without sockets.
final class DiagnosisTests: XCTestCase {
    let gateway = IPAddress.v4([198, 18, 0, 1])
    let host = IPAddress.v4([198, 18, 9, 2])
    var hop: PathDiagnosis.NextHop {
        PathDiagnosis.NextHop(
            gateway: gateway, interface: "eth0", interfaceIndex: 3, source: "198.18.0.2", hasNeighbors: true)
    }

    // MARK: Blame

    func facts(_ connectivity: Connectivity, _ change: (inout BlameFacts) -> Void = { _ in }) -> BlameFacts {
        var facts = BlameFacts(connectivity: connectivity)
        facts.routeUsable = true
        facts.hasGateway = true
        facts.neighborChecked = true
        change(&facts)
        return facts
    }

    func testBlameIsEmptyWhileFullOrUnknown() {
        XCTAssertNil(BlameRules.blame(facts(.full)))
        XCTAssertNil(BlameRules.blame(facts(.unknown)))
    }

    func testNoneIsTheLinkUnlessTheLookupFailsOverAUsableRoute() {
        XCTAssertEqual(BlameRules.blame(facts(.none) { $0.routeUsable = false }), .link)
        XCTAssertEqual(
            BlameRules.blame(
                facts(.none) {
                    $0.routeUsable = false; $0.lookupFailed = true
                }), .link,
            "no route: the lookup fails because of the link")
        XCTAssertEqual(BlameRules.blame(facts(.none) { $0.lookupFailed = true }), .dns)
    }

    func testPortalAndTheCheckAndDNS() {
        XCTAssertEqual(BlameRules.blame(facts(.portal)), .portal)
        XCTAssertEqual(BlameRules.blame(facts(.limited) { $0.hostAnswering = true }), .check)
        XCTAssertEqual(
            BlameRules.blame(
                facts(.limited) {
                    $0.hostAnswering = true; $0.resolverBroken = true
                }), .dns)
    }

    func testASilentHostIsPlacedByTheNeighbourCheckAndTheProbePastTheGateway() {
        XCTAssertNil(BlameRules.blame(facts(.limited)), "not found yet: nothing said")
        XCTAssertEqual(BlameRules.blame(facts(.limited) { $0.neighbor = .unreachable }), .gateway)
        XCTAssertNil(
            BlameRules.blame(facts(.limited) { $0.neighbor = .reachable }), "the probe past the gateway is still out")
        XCTAssertEqual(
            BlameRules.blame(
                facts(.limited) {
                    $0.neighbor = .reachable; $0.beyond = .carried
                }), .host)
        XCTAssertEqual(
            BlameRules.blame(
                facts(.limited) {
                    $0.neighbor = .reachable; $0.beyond = .silent
                }), .upstream)
        XCTAssertEqual(
            BlameRules.blame(
                facts(.limited) {
                    $0.neighbor = .unknown; $0.beyond = .silent
                }), .upstream,
            "a check that could not be made does not blame the gateway")
        XCTAssertEqual(
            BlameRules.blame(
                facts(.limited) {
                    $0.neighborChecked = false; $0.beyond = .carried
                }), .host,
            "a link without neighbours goes straight to the probe past the gateway")
        XCTAssertEqual(
            BlameRules.blame(facts(.limited) { $0.hasGateway = false }), .host, "on-link: Host is the next hop")
    }

    func testReasonNamesTheGatewayAndItsInterface() {
        XCTAssertEqual(
            BlameRules.reason(.gateway, gateway: gateway, interface: "wlan0"),
            "gateway 198.18.0.1 does not answer on wlan0")
        XCTAssertNotNil(BlameRules.reason(.upstream, gateway: gateway, interface: "wlan0"))
        XCTAssertNil(BlameRules.reason(.host, gateway: gateway, interface: "wlan0"))
    }

    // MARK: The diagnosis's schedule

    func neighborChecks(_ actions: [PathDiagnosis.Action]) -> [UInt64] {
        actions.compactMap { if case .checkNeighbor(_, _, _, let generation, _) = $0 { generation } else { nil } }
    }

    func beyondProbes(_ actions: [PathDiagnosis.Action]) -> [(UInt8, UInt64)] {
        actions.compactMap {
            if case .probeBeyond(_, _, let hops, let generation) = $0 { (hops, generation) } else { nil }
        }
    }

    func testANewNextHopIsAskedAtOnceThenAtMostOnceAMinuteWhileHealthy() throws {
        var diagnosis = PathDiagnosis()
        let first = diagnosis.routeChanged(hop, now: 0)
        let generation = try XCTUnwrap(neighborChecks(first).first)
        XCTAssertEqual(routine(first), [false], "a new next hop is asked afresh")
        XCTAssertTrue(diagnosis.routeChanged(hop, now: 1 * ms).isEmpty, "the same next hop: nothing new")
        XCTAssertTrue(diagnosis.neighborAnswered(generation: generation, .reachable, now: 10 * ms).isEmpty)
        XCTAssertEqual(diagnosis.neighbor, .reachable)
        XCTAssertEqual(diagnosis.nextWakeup, .origin + PathDiagnosis.healthyRecheck)
        XCTAssertTrue(diagnosis.handleTimeout(now: 30_000 * ms).isEmpty, "not before a minute")
        var sent = 1
        var now = Instant.origin
        // An hour of health: one check a minute at most.
        while now < 3_600_000 * ms {
            now = diagnosis.nextWakeup ?? .distantFuture
            let actions = diagnosis.handleTimeout(now: now)
            guard let next = neighborChecks(actions).first else { break }
            XCTAssertEqual(
                routine(actions), [true], "the healthy recheck may take another target's answer for the same next hop")
            sent += 1
            _ = diagnosis.neighborAnswered(generation: next, .reachable, now: now + 5 * ms)
        }
        XCTAssertLessThanOrEqual(sent, 61, "at most one check a minute over an hour while healthy")
        XCTAssertTrue(beyondProbes([]).isEmpty)
    }

    func routine(_ actions: [PathDiagnosis.Action]) -> [Bool] {
        actions.compactMap { if case .checkNeighbor(_, _, _, _, let routine) = $0 { routine } else { nil } }
    }

    func testASuspicionAsksTheNextHopThenProbesPastItWhenItAnswers() throws {
        var diagnosis = PathDiagnosis()
        let first = try XCTUnwrap(neighborChecks(diagnosis.routeChanged(hop, now: 0)).first)
        _ = diagnosis.neighborAnswered(generation: first, .reachable, now: 1 * ms)
        let suspected = diagnosis.hostChanged(silent: true, address: host, now: 100 * ms)
        let second = try XCTUnwrap(neighborChecks(suspected).first, "a suspicion asks the next hop at once")
        XCTAssertTrue(
            diagnosis.hostChanged(silent: true, address: host, now: 200 * ms).isEmpty, "one check per suspicion")
        let answered = diagnosis.neighborAnswered(generation: second, .reachable, now: 300 * ms)
        let (hops, beyond) = try XCTUnwrap(beyondProbes(answered).first)
        XCTAssertEqual(hops, 2, "the TTL expires at the first router past the gateway")
        diagnosis.beyondAnswered(generation: beyond, .silent)
        XCTAssertEqual(diagnosis.beyond, .silent)
        XCTAssertTrue(diagnosis.hostChanged(silent: false, address: host, now: 2_000 * ms).isEmpty)
        XCTAssertNil(diagnosis.beyond, "Host answers again: the last fault's finding is history")
    }

    func testADeadGatewayGetsNoProbePastIt() throws {
        var diagnosis = PathDiagnosis()
        let generation = try XCTUnwrap(neighborChecks(diagnosis.routeChanged(hop, now: 0)).first)
        let suspected = diagnosis.hostChanged(silent: true, address: host, now: 100 * ms)
        XCTAssertTrue(neighborChecks(suspected).isEmpty, "the route's check is still running: it serves")
        let answered = diagnosis.neighborAnswered(generation: generation, .unreachable, now: 700 * ms)
        XCTAssertTrue(beyondProbes(answered).isEmpty, "\(answered)")
        XCTAssertEqual(diagnosis.neighbor, .unreachable)
    }

    func testAStaleAnswerIsIgnored() {
        var diagnosis = PathDiagnosis()
        let old = neighborChecks(diagnosis.routeChanged(hop, now: 0)).first ?? 0
        var other = hop
        other.gateway = .v4([198, 18, 0, 254])
        _ = diagnosis.routeChanged(other, now: 1 * ms)
        _ = diagnosis.neighborAnswered(generation: old, .unreachable, now: 2 * ms)
        XCTAssertNil(diagnosis.neighbor, "the answer was about the old next hop")
    }

    func testNothingIsSentAsleepAndTheNextHopIsAskedOnResume() {
        var diagnosis = PathDiagnosis()
        _ = diagnosis.routeChanged(hop, now: 0)
        diagnosis.suspended()
        XCTAssertNil(diagnosis.nextWakeup)
        XCTAssertTrue(diagnosis.hostChanged(silent: true, address: host, now: 1 * ms).isEmpty)
        XCTAssertEqual(neighborChecks(diagnosis.resumed(now: 2 * ms)).count, 1)
    }

    func testALinkWithoutNeighboursGoesStraightToTheProbePastTheGateway() {
        var diagnosis = PathDiagnosis()
        var tunnel = hop
        tunnel.hasNeighbors = false
        XCTAssertTrue(diagnosis.routeChanged(tunnel, now: 0).isEmpty)
        XCTAssertNil(diagnosis.nextWakeup, "no periodic check on a point-to-point link")
        XCTAssertEqual(beyondProbes(diagnosis.hostChanged(silent: true, address: host, now: 1 * ms)).count, 1)
    }

    // MARK: Composed in a path

    /// A host that answered goes silent behind a gateway that no longer answers ARP: the first
    /// failed probe asks the next hop, and Blame is `gateway` with the Connectivity change.
    func testAPathBlamesTheGatewayWithTheConnectivityChange() throws {
        var core = PathCore(
            host: "198.18.9.2", family: .ipv4,
            probeSettings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 500, failureThreshold: 2),
            seed: 3)
        var route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.2")
        route.gateway = gateway
        route.interfaceIndex = 3
        route.hasNeighbors = true
        route.routedFamilies = [.v4]
        var now = Instant.origin
        var asked: [PathCore.Action] = []
        func step(_ event: PathCore.Event) -> [PathCore.Action] {
            let actions = core.handle(event, now: now)
            XCTAssertNil(PathCore.outputContractBroken(actions), "\(actions)")
            asked += actions
            return actions
        }
        _ = step(.start(checkURL: ""))
        _ = step(.resolved(generation: 0, .success([host]), routedFamilies: [.v4]))
        _ = step(.evidence(.route(route)))
        var sent = step(.evidence(.probing(.icmpDatagram)))
        let routeCheck = asked.compactMap { if case .ask(.checkNeighbor(_, _, _, let g, _)) = $0 { g } else { nil } }
        XCTAssertEqual(routeCheck.count, 1, "the route's next hop is asked once: \(asked)")
        _ = step(.evidence(.neighborAnswered(generation: try XCTUnwrap(routeCheck.first), .reachable)))
        // Host answers a few probes.
        for _ in 0..<3 {
            guard
                case .ask(.send(let sequence, let token, _, _, _))? = sent.first(where: {
                    if case .ask(.send) = $0 { true } else { false }
                })
            else {
                now = core.nextWakeup ?? now
                sent = step(.timeout)
                continue
            }
            now += 5 * ms
            _ = step(.evidence(.probe(.reply(sequence: sequence, token: token, via: .icmp))))
            now = core.nextWakeup ?? now
            sent = step(.timeout)
        }
        XCTAssertEqual(core.state(previous: MonitorState()).connectivity, .full)
        XCTAssertEqual(core.state(previous: MonitorState()).neighbor, .reachable)
        // Silence: probes time out until the threshold.
        asked = []
        var state = MonitorState()
        for _ in 0..<40 where state.connectivity == .full || state.connectivity == .unknown {
            now = core.nextWakeup ?? now + 1 * ms
            let actions = step(.timeout)
            for case .ask(.checkNeighbor(_, _, _, let generation, _)) in actions {
                _ = step(.evidence(.neighborAnswered(generation: generation, .unreachable)))
            }
            state = core.state(previous: state)
        }
        XCTAssertEqual(state.connectivity, .limited)
        XCTAssertEqual(state.blame, .gateway, "published with the Connectivity change")
        XCTAssertEqual(state.neighbor, .unreachable)
        XCTAssertEqual(state.reason, "gateway 198.18.0.1 does not answer on eth0")
        let checks = asked.filter { if case .ask(.checkNeighbor) = $0 { true } else { false } }
        XCTAssertEqual(checks.count, 1, "one neighbour check per suspicion: \(asked)")
        XCTAssertFalse(
            asked.contains { if case .ask(.probeBeyond) = $0 { true } else { false } }, "no probe past a dead gateway")
    }

    /// Asleep, nothing is probed and no failure is counted; after the resume a probe goes at once.
    func testAPathSendsNothingAsleepAndProbesOnResume() {
        var core = PathCore(
            host: "198.18.9.2", family: .ipv4, probeSettings: ProbeSettings(intervalMilliseconds: 1000), seed: 5)
        var route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.2")
        route.routedFamilies = [.v4]
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([host]), routedFamilies: [.v4]), now: 0)
        _ = core.handle(.evidence(.route(route)), now: 0)
        _ = core.handle(.evidence(.probing(.icmpDatagram)), now: 0)
        _ = core.handle(.suspend, now: 1 * ms)
        XCTAssertNil(core.probe.nextWakeup, "asleep: no probe scheduled")
        XCTAssertNil(core.diagnosis.nextWakeup, "asleep: no neighbour check scheduled")
        XCTAssertEqual(core.probe.outstandingCount, 0, "probes in flight are forgotten, not failed")
        let resumed = core.handle(.resume, now: 60_000 * ms)
        XCTAssertTrue(resumed.contains { if case .ask(.send) = $0 { true } else { false } }, "\(resumed)")
        XCTAssertEqual(core.probe.verdict.consecutiveFailures, 0)
    }

    /// The diagnosis starts at the first failed probe: with FailureThreshold 2 the probe past the gateway is
    /// out before Connectivity changes, so Blame follows the change by less than the probe's limit.
    func testTheDiagnosisStartsAtTheSuspicion() throws {
        var core = PathCore(
            host: "198.18.9.2", family: .ipv4,
            probeSettings: ProbeSettings(intervalMilliseconds: 200, timeoutMilliseconds: 200, failureThreshold: 2),
            seed: 9)
        var route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.2")
        route.gateway = gateway
        route.interfaceIndex = 3
        route.hasNeighbors = true
        route.routedFamilies = [.v4]
        var now = Instant.origin
        var silent = false
        var beyondAt: Instant?
        var changedAt: Instant?
        var pending: [PathCore.Event] = []
        func step(_ event: PathCore.Event) {
            for action in core.handle(event, now: now) {
                switch action {
                case .ask(.send(let sequence, let token, _, _, _)) where !silent:
                    pending.append(.evidence(.probe(.reply(sequence: sequence, token: token, via: .icmp))))
                case .ask(.checkNeighbor(_, _, _, let generation, _)):
                    pending.append(.evidence(.neighborAnswered(generation: generation, .reachable)))
                case .ask(.probeBeyond):
                    if beyondAt == nil, silent { beyondAt = now }
                default:
                    break
                }
            }
            if changedAt == nil, silent, core.state(previous: MonitorState()).connectivity == .limited {
                changedAt = now
            }
        }
        step(.start(checkURL: ""))
        step(.resolved(generation: 0, .success([host]), routedFamilies: [.v4]))
        step(.evidence(.route(route)))
        step(.evidence(.probing(.icmpDatagram)))
        for _ in 0..<200 {
            while !pending.isEmpty {
                now += 1 * ms
                step(pending.removeFirst())
            }
            if now > 2_000 * ms { silent = true }
            if changedAt != nil { break }
            now = max(now, core.nextWakeup ?? now + 1 * ms)
            step(.timeout)
        }
        let beyond = try XCTUnwrap(beyondAt)
        let changed = try XCTUnwrap(changedAt)
        XCTAssertLessThan(beyond, changed, "the probe past the gateway went out at the suspicion")
    }
}
