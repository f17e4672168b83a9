import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// The one core per target: events in, actions out, one publish per event, after every action
/// but the verdict being ready; nothing
/// sent before the transport says how it sends; the monitor and probe cores feed each other inside.
final class PathCoreTests: XCTestCase {
    let address = IPAddress.v4([198, 18, 0, 2])
    let route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.9")

    func makeCore() -> PathCore {
        PathCore(
            host: "a.test", family: .ipv4,
            probeSettings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 200),
            seed: 7)
    }

    /// A route verdict about the address the path watched before (on its way when the path moved on: taken in
    /// the batch its retarget came in) changes nothing; one about the address it watches now, or about no
    /// address, is its route.
    func testARouteVerdictAboutTheAddressWatchedBeforeIsNotThePathsRoute() {
        var core = makeCore()
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]), now: 1 * ms)
        var current = route.routed([.v4])
        current.destination = address.bytes
        _ = core.handle(.evidence(.route(current)), now: 2 * ms)
        XCTAssertEqual(core.monitor.route?.usable, true)
        var stale = ReachabilityVerdict(usable: false, reason: "no route to 198.18.9.9")
        stale.destination = IPAddress.v4([198, 18, 9, 9]).bytes
        let actions = core.handle(.evidence(.route(stale.routed([.v4]))), now: 3 * ms)
        XCTAssertEqual(core.monitor.route?.usable, true, "a verdict about another address moved the route")
        XCTAssertFalse(actions.contains(.publish), "\(actions)")
        var lost = ReachabilityVerdict(usable: false, reason: "no route to 198.18.0.2")
        lost.destination = address.bytes
        _ = core.handle(.evidence(.route(lost.routed([.v4]))), now: 4 * ms)
        XCTAssertEqual(core.monitor.route?.usable, false)
        _ = core.handle(.evidence(.route(route.routed([.v4]))), now: 5 * ms)
        XCTAssertEqual(core.monitor.route?.usable, true, "a verdict about no address in particular is taken")
    }

    /// The census is asked to count what is routed as the route core says Host is: the sample carries the route's
    /// interface and next hop, so the census asks the kernel only for the remotes' routes.
    func testATrafficSampleCarriesTheRouteCoresWordOnHostsRoute() {
        var core = PathCore(
            host: "a.test", family: .ipv4,
            probeSettings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 200, evidence: .traffic),
            seed: 7)
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]), now: 1 * ms)
        var verdict = route.routed([.v4])
        verdict.interfaceIndex = 2
        verdict.gateway = .v4([198, 18, 0, 1])
        var actions = core.handle(.evidence(.route(verdict)), now: 2 * ms)
        actions += core.handle(.evidence(.probing(.icmpDatagram)), now: 3 * ms)
        var now: Instant = 3 * ms
        while !actions.contains(where: { if case .ask(.sampleTraffic) = $0 { true } else { false } }), now < 5_000 * ms
        {
            now = core.nextWakeup ?? now + 100 * ms
            actions = core.handle(.timeout, now: now)
        }
        let routes = actions.compactMap { action -> HostRoute? in
            if case .ask(.sampleTraffic(_, _, let route?, _, _)) = action { route } else { nil }
        }
        XCTAssertEqual(routes, [HostRoute(interfaceIndex: 2, gateway: .v4([198, 18, 0, 1]))], "\(actions)")
    }

    /// INTERFACE.md "Quiet by default", the path's sources of doubt: under `adaptive` a calm path sends nothing until its
    /// calm period, and probes at once when its route to Host changes, when its gateway is found unreachable, or when
    /// fresh lookups of Host fail; metered (NetworkManager's word on the route's link) makes the calm period 4 × as
    /// long.
    func testACalmPathProbesAtOnceOnEachDoubtItSees() throws {
        var core = PathCore(
            host: "a.test", family: .ipv4,
            probeSettings: ProbeSettings(
                intervalMilliseconds: 1000, timeoutMilliseconds: 200, probing: .adaptive,
                idleIntervalMilliseconds: 10_000),
            seed: 7)
        var now: Instant = 0
        var sent: [Instant] = []
        var neighborAsked: UInt64?
        func take(_ actions: [PathCore.Action]) {
            for case .ask(.checkNeighbor(_, _, _, let generation, _)) in actions { neighborAsked = generation }
            for case .ask(.send(let sequence, let token, _, _, _)) in actions {
                sent.append(now)
                // The host answers 2 ms later.
                now = now + 2 * ms
                take(core.handle(.evidence(.probe(.reply(sequence: sequence, token: token, via: .icmp))), now: now))
            }
        }
        take(core.handle(.start(checkURL: ""), now: now))
        take(core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]), now: now))
        var verdict = route.routed([.v4])
        verdict.interfaceIndex = 2
        verdict.gateway = .v4([198, 18, 0, 1])
        verdict.hasNeighbors = true
        take(core.handle(.evidence(.route(verdict)), now: now))
        take(core.handle(.evidence(.probing(.icmpDatagram)), now: now))
        func run(until end: Instant) {
            while let next = core.nextWakeup, next <= end {
                now = max(now, next)
                take(core.handle(.timeout, now: now))
            }
            now = end
        }
        run(until: 5_000 * ms)
        XCTAssertTrue(core.probe.isCalm)
        XCTAssertEqual(sent.count, 1, "calm after the first answer: nothing until the calm period")
        // Another next hop on the route: a suspicion, a probe at once.
        verdict.gateway = .v4([198, 18, 0, 254])
        take(core.handle(.evidence(.route(verdict)), now: now))
        XCTAssertEqual(sent.last, 5_000 * ms, "\(sent)")
        run(until: 8_000 * ms)
        XCTAssertTrue(core.probe.isCalm)
        // The neighbour check finds the gateway unreachable: at once.
        let generation = try XCTUnwrap(neighborAsked)
        take(core.handle(.evidence(.neighborAnswered(generation: generation, .unreachable)), now: now))
        XCTAssertEqual(sent.last, 8_000 * ms, "\(sent)")
        run(until: 12_000 * ms)
        // Fresh lookups of Host fail: at once.
        take(core.handle(.freshLookups(failure: "SERVFAIL"), now: now))
        XCTAssertEqual(sent.last, 12_000 * ms, "\(sent)")
        run(until: 13_000 * ms)
        take(core.handle(.freshLookups(failure: nil), now: now))
        // NetworkManager says the route's link is metered: the calm period is 40 s.
        let link = LinkView(
            id: LinkID(index: 2, generation: 1), name: "eth0", facts: LinkFacts(meteredByNetworkManager: true))
        take(core.handle(.evidence(.route(verdict, link: link)), now: now))
        XCTAssertEqual(core.probe.calmPeriod, 40 * second)
        let before = sent.count
        run(until: 60_000 * ms)
        XCTAssertLessThanOrEqual(sent.count - before, 2, "\(sent)")
    }

    /// At most one publish; after it, only the verdict being ready (once, last).
    func assertOnePublishAtMostAndLast(_ actions: [PathCore.Action], file: StaticString = #filePath, line: UInt = #line)
    {
        XCTAssertNil(PathCore.outputContractBroken(actions), "\(actions)", file: file, line: line)
    }

    /// The contract's statement catches each way of breaking it.
    func testTheOutputContractNamesWhatBrokeIt() {
        XCTAssertNil(PathCore.outputContractBroken([.ask(.cancelCheck), .publish, .verdictReady]))
        XCTAssertNil(PathCore.outputContractBroken([]))
        XCTAssertNotNil(
            PathCore.outputContractBroken([.publish, .ask(.cancelCheck)]), "published before the last action")
        XCTAssertNotNil(PathCore.outputContractBroken([.publish, .publish]), "published twice")
        XCTAssertNotNil(
            PathCore.outputContractBroken([.verdictReady, .publish]), "the verdict ready before the publish")
        XCTAssertNotNil(PathCore.outputContractBroken([.verdictReady, .verdictReady]), "ready twice")
    }

    func sends(_ actions: [PathCore.Action]) -> [(UInt16, UInt64)] {
        actions.compactMap {
            if case .ask(.send(let sequence, let token, _, _, _)) = $0 { (sequence, token) } else { nil }
        }
    }

    /// Start → resolve; the answer → watch the route and probe the address, but no packet until
    /// `.probing`; then exactly one probe; its reply → the report changes and the state is published once.
    func testFromStartToAnAnsweringHost() throws {
        var core = makeCore()
        let started = core.handle(.start(checkURL: ""), now: 0)
        XCTAssertEqual(started, [.resolve(host: "a.test", family: .ipv4, generation: 0), .publish])
        let resolved = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]), now: 5 * ms)
        assertOnePublishAtMostAndLast(resolved)
        XCTAssertTrue(resolved.contains(.ask(.watchRoute(address))), "\(resolved)")
        XCTAssertTrue(resolved.contains(.ask(.probe(address))), "\(resolved)")
        XCTAssertTrue(sends(resolved).isEmpty, "a probe went out before the transport could send: \(resolved)")
        let routed = core.handle(.evidence(.route(route.routed([.v4]))), now: 6 * ms)
        XCTAssertTrue(sends(routed).isEmpty, "the route regained probed before the transport was ready: \(routed)")
        assertOnePublishAtMostAndLast(routed)

        let probing = core.handle(.evidence(.probing(.icmpDatagram)), now: 7 * ms)
        let sent = sends(probing)
        XCTAssertEqual(sent.count, 1, "\(probing)")
        assertOnePublishAtMostAndLast(probing)
        let (sequence, token) = try XCTUnwrap(sent.first)
        let answered = core.handle(.evidence(.probe(.reply(sequence: sequence, token: token, via: .icmp))), now: 9 * ms)
        assertOnePublishAtMostAndLast(answered)
        XCTAssertTrue(answered.contains(.verdictReady), "\(answered)")
        XCTAssertTrue(
            answered.contains {
                if case .ask(.reportChanged(_, let new)) = $0 { new.answering == true } else { false }
            },
            "\(answered)")
        XCTAssertEqual(answered.suffix(2), [.publish, .verdictReady], "Checks answer with the state just published")
        let state = core.state(previous: MonitorState())
        XCTAssertEqual(state.status, .ethernet)
        XCTAssertEqual(state.interface, "eth0")
        XCTAssertEqual(state.address, "198.18.0.2")
    }

    /// Every event, whatever it sets off inside, publishes at most once, as its last action.
    func testEveryEventPublishesAtMostOnceAndLast() {
        var core = makeCore()
        var now = Instant.origin
        var outstanding: [(UInt16, UInt64)] = []
        var events: [PathCore.Event] = [
            .start(checkURL: "http://198.18.2.2/generate_204"),
            .resolved(generation: 0, .success([address]), routedFamilies: [.v4]),
            .evidence(.probing(.icmpDatagram)), .evidence(.route(route.routed([.v4]))),
            .evidence(.checkAnswered(generation: 1, .expected)), .timeout, .timeout,
            .evidence(.route(ReachabilityVerdict(usable: false, reason: "no route").routed([]))),
            .evidence(.route(route.routed([.v4]))), .targetChanged(host: "b.test", family: .ipv4),
            .resolved(
                generation: 1, .failure(ResolverFailure(message: "cannot resolve b.test: SERVFAIL")),
                routedFamilies: nil),
            .timeout, .probeSettings(ProbeSettings(intervalMilliseconds: 100, timeoutMilliseconds: 100)), .checkURL(""),
        ]
        while !events.isEmpty {
            let event = events.removeFirst()
            now += 150 * ms
            let actions = core.handle(event, now: now)
            assertOnePublishAtMostAndLast(actions)
            outstanding += sends(actions)
            if let (sequence, token) = outstanding.popLast(), case .timeout = event {
                assertOnePublishAtMostAndLast(
                    core.handle(
                        .evidence(.probe(.reply(sequence: sequence, token: token, via: .tcp))), now: now + 1 * ms))
            }
            if actions.contains(where: { if case .ask(.probe) = $0 { true } else { false } }) {
                events.insert(.evidence(.probing(.icmpRaw)), at: 0)
            }
        }
    }

    /// A Check with nothing to probe says so; with an address it probes once and a verdict follows.
    func testACheckProbesOnlyWithAnAddress() throws {
        var core = makeCore()
        _ = core.handle(.start(checkURL: ""), now: 0)
        XCTAssertFalse(core.check(now: 1 * ms).probing)
        _ = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]), now: 2 * ms)
        let first = core.handle(.evidence(.probing(.icmpDatagram)), now: 3 * ms)
        let (sequence, token) = try XCTUnwrap(sends(first).first)
        _ = core.handle(.evidence(.probe(.reply(sequence: sequence, token: token, via: .icmp))), now: 4 * ms)
        // The first probe is the service's own: a Check right after it probes at once (it used to wait a Timeout).
        let soon = core.check(now: 5 * ms)
        XCTAssertTrue(soon.probing)
        let forced = try XCTUnwrap(sends(soon.actions).first, "a Check right after start waited: \(soon.actions)")
        _ = core.handle(.evidence(.probe(.reply(sequence: forced.0, token: forced.1, via: .icmp))), now: 6 * ms)
        // The Checks' own slot: one forced probe per Timeout, however many Checks.
        let again = core.check(now: 7 * ms)
        XCTAssertTrue(again.probing)
        XCTAssertTrue(sends(again.actions).isEmpty, "\(again.actions)")
        let later = core.handle(.timeout, now: try XCTUnwrap(core.nextWakeup))
        XCTAssertEqual(sends(later).count, 1, "\(later)")
    }

    /// Interval = Timeout = 5000 and a router answering "net unreachable": a Check right after start gets its
    /// verdict from the router's answer to its own probe at once, not a Timeout later (4,986 ms seen).
    func testACheckRightAfterStartIsAnsweredByTheNetworksRefusalAtOnce() throws {
        var core = PathCore(
            host: "198.18.0.2", family: .ipv4,
            probeSettings: ProbeSettings(intervalMilliseconds: 5000, timeoutMilliseconds: 5000), seed: 3)
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]), now: 1 * ms)
        _ = core.handle(.evidence(.route(route.routed([.v4]))), now: 1 * ms)
        let first = try XCTUnwrap(sends(core.handle(.evidence(.probing(.icmpDatagram)), now: 2 * ms)).first)
        let refused = core.handle(
            .evidence(.probe(.error(sequence: first.0, token: first.1, .unreachable(code: 0), from: "198.18.0.1"))),
            now: 3 * ms)
        XCTAssertTrue(refused.contains(.verdictReady))
        let check = core.check(now: 10 * ms)
        let probe = try XCTUnwrap(
            sends(check.actions).first, "the Check waited for the first probe's Timeout: \(check.actions)")
        let answer = core.handle(
            .evidence(.probe(.error(sequence: probe.0, token: probe.1, .unreachable(code: 0), from: "198.18.0.1"))),
            now: 11 * ms)
        XCTAssertEqual(answer.last, .verdictReady, "the Check is answered 1 ms after it came")
        XCTAssertEqual(core.state(previous: MonitorState()).status, .none)
    }

    /// A Host changed again and again: the first probes stay within one per Timeout, and none takes a Check's slot.
    func testFirstProbesOfRapidTargetChangesStayWithinOnePerTimeout() throws {
        var core = makeCore()
        _ = core.handle(.start(checkURL: ""), now: 0)
        var sent = 0
        var now = Instant.origin
        for round in 0..<20 {
            let host = "198.18.0.\(10 + round)"
            now += 10 * ms
            _ = core.handle(.targetChanged(host: host, family: .ipv4), now: now)
            let generation = UInt64(round + 1)
            let resolved = core.handle(
                .resolved(
                    generation: generation, .success([try XCTUnwrap(IPAddress(host))]),
                    routedFamilies: [.v4]), now: now)
            sent += sends(resolved).count
            sent += sends(core.handle(.evidence(.probing(.icmpDatagram)), now: now)).count
            while let wake = core.nextWakeup, wake <= now { sent += sends(core.handle(.timeout, now: wake)).count }
        }
        // 200 ms of changes at Timeout 200: the first probe and at most one more.
        XCTAssertLessThanOrEqual(sent, 2)
        XCTAssertGreaterThanOrEqual(sent, 1)
    }

    /// A new target's first probe goes out before the kernel's first word on its route: that word sends no second
    /// probe beside it (AddTarget churn sent 41 packets where 16 first probes allow 34). A route lost and regained
    /// still probes at once.
    func testTheFirstRouteVerdictSendsNoSecondProbeBesideTheFirst() throws {
        var core = makeCore()
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]), now: 1 * ms)
        let first = try XCTUnwrap(sends(core.handle(.evidence(.probing(.icmpDatagram)), now: 2 * ms)).first)
        let routed = core.handle(.evidence(.route(route.routed([.v4]))), now: 3 * ms)
        XCTAssertTrue(sends(routed).isEmpty, "a second probe beside the first: \(routed)")
        _ = core.handle(.evidence(.probe(.reply(sequence: first.0, token: first.1, via: .icmp))), now: 4 * ms)
        XCTAssertEqual(core.state(previous: MonitorState()).status, .ethernet)
        // The same when the first probe's answer comes before the kernel's word on the route.
        // (A Timeout on: a new target's first probes go out at most one per Timeout.)
        _ = core.handle(.targetChanged(host: "198.18.0.3", family: .ipv4), now: 300 * ms)
        let other = IPAddress.v4([198, 18, 0, 3])
        _ = core.handle(.resolved(generation: 1, .success([other]), routedFamilies: [.v4]), now: 300 * ms)
        let again = try XCTUnwrap(sends(core.handle(.evidence(.probing(.icmpDatagram)), now: 301 * ms)).first)
        _ = core.handle(
            .evidence(.probe(.reply(sequence: again.0, token: again.1, via: .icmp))), now: 301 * ms + 50_000)
        let late = core.handle(.evidence(.route(route.routed([.v4]))), now: 302 * ms)
        XCTAssertTrue(sends(late).isEmpty, "a second probe after the first was answered: \(late)")
        let lost = ReachabilityVerdict(usable: false, reason: "no route to 198.18.0.2")
        _ = core.handle(.evidence(.route(lost.routed([]))), now: 310 * ms)
        let regained = core.handle(.evidence(.route(route.routed([.v4]))), now: 320 * ms)
        XCTAssertEqual(sends(regained).count, 1, "a route regained probes at once: \(regained)")
    }
}

extension ReachabilityVerdict {
    /// This verdict said while `families` have a default route.
    func routed(_ families: IPFamilies) -> ReachabilityVerdict {
        var verdict = self
        verdict.routedFamilies = families
        return verdict
    }
}
