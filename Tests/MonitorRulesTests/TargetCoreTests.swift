import MonitorRules
import NetAddress
import ProbeRules
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// A target's paths, one per address family, and the headline they make (INTERFACE.md "Every
/// path"): played on a virtual clock by a world that answers in each family as the test says.
final class TargetCoreTests: XCTestCase {
    static let v4 = IPAddress.v4([198, 18, 2, 2])
    static let v6 = IPAddress.v6([0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2])

    /// The core and a world around it: each family's host answers after 1 ms, or is silent.
    struct Bench {
        var core: TargetCore
        var now = Instant.origin
        var answering: [IPFamily: Bool] = [.v4: true, .v6: true]
        /// Each family's round trip.
        var rtts: [IPFamily: Duration] = [.v4: Bench.rtt, .v6: Bench.rtt]
        var state = MonitorState()
        /// Every published state's Status and Connectivity, in order.
        var published: [(Status, Connectivity)] = []
        var sent: [IPFamily: [Instant]] = [.v4: [], .v6: []]
        var ready = 0
        var brokenContract: [String] = []
        private var replies: [(at: Instant, family: IPFamily, sequence: UInt16, token: UInt64)] = []
        private var events: [TargetCore.Event] = []

        init(family: AddressFamily = .any, interval: UInt32 = 1000, timeout: UInt32 = 500, failures: UInt32 = 2) {
            core = TargetCore(
                host: "dual.test", family: family,
                probeSettings: ProbeSettings(
                    intervalMilliseconds: interval, timeoutMilliseconds: timeout,
                    failureThreshold: failures),
                seed: 11)
        }

        mutating func handle(_ event: TargetCore.Event) {
            events.append(event)
            while !events.isEmpty {
                let next = events.removeFirst()
                carryOut(core.handle(next, now: now))
            }
        }

        mutating func check() -> Bool {
            let (probing, actions) = core.check(now: now)
            carryOut(actions)
            while !events.isEmpty { carryOut(core.handle(events.removeFirst(), now: now)) }
            return probing
        }

        private mutating func carryOut(_ actions: [TargetCore.Action]) {
            if let broken = TargetCore.outputContractBroken(actions) { brokenContract.append(broken) }
            for action in actions {
                switch action {
                case .path(let family, .probe(let address)):
                    events.append(.path(family, .probing(address == nil ? nil : .icmpDatagram)))
                case .path(let family, .send(let sequence, let token, _, _, _)):
                    sent[family, default: []].append(now)
                    if answering[family] == true {
                        replies.append((now + (rtts[family] ?? Self.rtt), family, sequence, token))
                    }
                case .publish:
                    state = core.state(previous: state)
                    if published.last.map({ $0 != (state.status, state.connectivity) }) ?? true {
                        published.append((state.status, state.connectivity))
                    }
                case .verdictReady:
                    ready += 1
                default:
                    break
                }
            }
        }

        static let rtt = Duration.milliseconds(1)

        /// Lets time pass to `end`, replies and wake-ups in order.
        mutating func run(until end: Instant) {
            while true {
                let reply = replies.min { $0.at < $1.at }
                let wake = core.nextWakeup
                let next = min(reply?.at ?? .distantFuture, wake ?? .distantFuture)
                guard next <= end else { break }
                now = max(now, next)
                if let reply, reply.at == next {
                    replies.removeAll { $0.sequence == reply.sequence && $0.family == reply.family }
                    handle(
                        .path(reply.family, .probe(.reply(sequence: reply.sequence, token: reply.token, via: .icmp))))
                } else {
                    handle(.timeout)
                }
            }
            now = end
        }

        /// Start, the lookup's answer (IPv6 listed first) and both routes.
        mutating func start(addresses: [IPAddress] = [TargetCoreTests.v6, TargetCoreTests.v4]) {
            handle(.start(checkURL: ""))
            handle(.resolved(generation: 0, .success(addresses), routedFamilies: [.v4, .v6]))
            handle(
                .path(
                    .v4,
                    .route(
                        ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.1.1")
                            .routed([.v4, .v6]))))
            handle(
                .path(
                    .v6,
                    .route(
                        ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "2001:db8:1::1")
                            .routed([.v4, .v6]))))
        }
    }

    /// One lookup for both families; their first probes go out at the same moment.
    func testBothFamiliesFromOneLookupAndTheirFirstProbesTogether() {
        var bench = Bench()
        var actions = bench.core.handle(.start(checkURL: ""), now: 0)
        XCTAssertEqual(actions.filter { if case .resolve = $0 { true } else { false } }.count, 1, "\(actions)")
        actions = bench.core.handle(
            .resolved(generation: 0, .success([Self.v6, Self.v4]), routedFamilies: [.v4, .v6]), now: 0)
        XCTAssertTrue(actions.contains(.path(.v4, .probe(Self.v4))), "\(actions)")
        XCTAssertTrue(actions.contains(.path(.v6, .probe(Self.v6))), "\(actions)")
        bench.now = 5 * ms
        bench.handle(.path(.v4, .probing(.icmpDatagram)))
        bench.handle(.path(.v6, .probing(.icmpDatagram)))
        XCTAssertEqual(bench.sent[.v4], [5 * ms])
        XCTAssertEqual(bench.sent[.v6], [5 * ms])
        XCTAssertTrue(bench.brokenContract.isEmpty, "\(bench.brokenContract)")
    }

    /// A path takes from its world only evidence (`TargetCore.Event.path` carries a `PathEvidence`: what the target
    /// shares out, a lookup's answer, a sleep, settings, cannot be handed in as one path's); every ask of a path comes
    /// back tagged with its family.
    func testAPathTakesOnlyEvidenceFromItsWorldAndAsksOnlyTaggedWithItsFamily() {
        var bench = Bench()
        bench.start()
        bench.run(until: 100 * ms)
        XCTAssertEqual(bench.core[path: .v4].connectivity, .full)
        var actions = bench.core.handle(.targetChanged(host: "other.test", family: .any), now: bench.now)
        actions += bench.core.handle(.timeout, now: bench.now + 5 * second)
        XCTAssertTrue(actions.contains { if case .path = $0 { true } else { false } }, "\(actions)")
    }

    /// Both full: the headline is the family listed first (IPv6 here), with its address.
    func testTheHeadlineFollowsResolverOrderAmongEquals() {
        var bench = Bench()
        bench.start()
        bench.run(until: 100 * ms)
        XCTAssertEqual(bench.state.connectivity, .full)
        XCTAssertEqual(bench.state.address, Self.v6.description)
        XCTAssertEqual(bench.state.ipv4.connectivity, .full)
        XCTAssertEqual(bench.state.ipv6.connectivity, .full)
        XCTAssertEqual(bench.state.ipv4.address, Self.v4.description)
        XCTAssertEqual(bench.state.ipv4.reason, "")

        var v4First = Bench()
        v4First.start(addresses: [Self.v4, Self.v6])
        v4First.run(until: 100 * ms)
        XCTAssertEqual(v4First.state.address, Self.v4.description)
    }

    /// The headline's family goes silent while the other answers: only that family's verdict
    /// moves; Connectivity and Status never leave full, and the headline hands over.
    func testADeadFamilyHandsTheHeadlineOverWithoutMovingIt() {
        var bench = Bench()
        bench.start()
        bench.run(until: 3000 * ms)
        XCTAssertEqual(bench.state.address, Self.v6.description)
        let before = bench.published.count
        bench.answering[.v6] = false
        bench.run(until: 10_000 * ms)
        XCTAssertEqual(bench.state.ipv6.connectivity, .limited)
        XCTAssertTrue(bench.state.ipv6.reason.hasPrefix("host not answering over IPv6"), bench.state.ipv6.reason)
        XCTAssertEqual(bench.state.connectivity, .full)
        XCTAssertEqual(bench.state.status, .ethernet)
        XCTAssertEqual(bench.state.reason, "")
        XCTAssertEqual(bench.state.address, Self.v4.description, "the working family gives the headline")
        XCTAssertEqual(bench.published.count, before, "Status or Connectivity moved: \(bench.published.suffix(3))")
        XCTAssertTrue(bench.brokenContract.isEmpty, "\(bench.brokenContract)")

        // And back: the first family in resolver order gives the headline again.
        bench.answering[.v6] = true
        bench.run(until: 15_000 * ms)
        XCTAssertEqual(bench.state.ipv6.connectivity, .full)
        XCTAssertEqual(bench.state.address, Self.v6.description)
        XCTAssertEqual(bench.published.count, before)
    }

    /// Every family dead: the outage is confirmed no later than a single family's would be.
    func testADeadUpstreamIsConfirmedAsFastAsWithOneFamily() {
        func confirmation(_ family: AddressFamily) -> Duration {
            var bench = Bench(family: family, interval: 1000, timeout: 500, failures: 3)
            bench.start()
            bench.run(until: 60_000 * ms)
            bench.answering = [.v4: false, .v6: false]
            let cut = bench.now
            var confirmed: Duration?
            while bench.now < cut + 20_000 * ms && confirmed == nil {
                bench.run(until: bench.now + 10 * ms)
                if bench.state.connectivity != .full { confirmed = bench.now - cut }
            }
            return confirmed ?? .forever
        }
        let single = confirmation(.ipv6)
        let both = confirmation(.any)
        XCTAssertLessThan(single, 20_000 * ms)
        XCTAssertLessThanOrEqual(both, single + 20 * ms, "both families: \(both / ms) ms, one: \(single / ms) ms")
    }

    /// Issue 45's shape: dual stack at 2000/2000/2, both full, then the upstream drops everything. The contract
    /// ("Cheap when both work"): confirmed no later than a single family would be, (FailureThreshold − 1) × Interval
    /// + Timeout after the first unanswered probe (one Timeout more with Interval < Timeout) — 4 s here, 6 s seen —
    /// and never sooner than (FailureThreshold − 1) × min(Interval, Timeout) + Timeout. The other family's probes
    /// sent at the suspicion count toward the same outage, whichever family lost the first probe.
    func testBothFamiliesDeadAreConfirmedWithinTheSingleFamilyBound() {
        let shapes: [(UInt32, UInt32, UInt32)] = [
            (2000, 2000, 2), (1000, 1000, 3), (1000, 500, 2), (500, 1500, 2), (5000, 1000, 2),
        ]
        for (interval, timeout, failures) in shapes {
            for phase in [0, 1, 250, 777, 1999] as [UInt64] {
                var bench = Bench(family: .any, interval: interval, timeout: timeout, failures: failures)
                bench.start()
                bench.run(until: (60_000 + phase) * ms)
                bench.answering = [.v4: false, .v6: false]
                let cut = bench.now
                var confirmed: Instant?
                while bench.now < cut + 30_000 * ms && confirmed == nil {
                    bench.run(until: bench.now + 1 * ms)
                    if bench.state.connectivity != .full { confirmed = bench.now }
                }
                // The first probe sent after the cut is the first whose reply never comes.
                let firstUnanswered = bench.sent.values.flatMap { $0 }.filter { $0 > cut }.min() ?? cut
                let (i, t, f) = (UInt64(interval), UInt64(timeout), UInt64(failures))
                let upper = Duration.milliseconds((f - 1) * i + t + (i < t ? t : 0))
                let lower = Duration.milliseconds((f - 1) * min(i, t) + t)
                let took = (confirmed ?? .distantFuture) - firstUnanswered
                let shape = "\(interval)/\(timeout)/\(failures), phase \(phase)"
                // The early follow-up (10 ms at this 1 ms round trip) is in flight when the first probe is lost and
                // serves as the re-probe, as with one family: its offset is the only slack.
                XCTAssertLessThanOrEqual(
                    took, upper + 11 * ms, "\(shape): \(took / ms) ms after the first unanswered probe")
                XCTAssertGreaterThanOrEqual(took, lower, "\(shape): confirmed sooner than the silence allows")
            }
        }
    }

    /// While both are full the other family is probed at most once per 30 s; at the headline's
    /// suspicion it is probed at once.
    func testTheOtherFamilyIsCheapWhileAllAreFullAndProbedAtOnceOnSuspicion() {
        var bench = Bench()
        bench.start()
        bench.run(until: 5000 * ms)
        let start = bench.now
        bench.run(until: start + 120_000 * ms)
        let v4 = bench.sent[.v4, default: []].filter { $0 > start }.count
        let v6 = bench.sent[.v6, default: []].filter { $0 > start }.count
        XCTAssertGreaterThanOrEqual(v6, 119, "the headline's family keeps its Interval")
        XCTAssertLessThanOrEqual(v4, 4, "IPv4 probed \(v4) times in 120 s while both were full")
        XCTAssertGreaterThanOrEqual(v4, 3)

        bench.answering[.v6] = false
        let silentFrom = bench.now
        // The next IPv6 probe (at most an Interval away) is lost a Timeout later: IPv4 goes out then.
        bench.run(until: silentFrom + 1600 * ms)
        let afterSuspicion = bench.sent[.v4, default: []].filter { $0 > silentFrom }
        XCTAssertFalse(
            afterSuspicion.isEmpty,
            "IPv4 not probed at the headline's suspicion: v6 \(bench.sent[.v6, default: []].filter { $0 > silentFrom - 2000 * ms }.map { $0 / ms }), v4 \(bench.sent[.v4, default: []].suffix(3).map { $0 / ms }), silent from \(silentFrom / ms)"
        )
        let firstLoss = bench.sent[.v6, default: []].first { $0 > silentFrom }.map { $0 + 500 * ms }
        // (IPv4's own 30-s schedule may also fall in this window.)
        XCTAssertTrue(
            firstLoss.map(afterSuspicion.contains) == true, "IPv4 was not probed the moment IPv6's probe was lost")
    }

    /// AddressFamily ipv4: the other family sends nothing and says why.
    func testAFamilyAddressFamilyExcludesSendsNothing() {
        var bench = Bench(family: .ipv4)
        bench.start()
        bench.run(until: 10_000 * ms)
        XCTAssertEqual(bench.sent[.v6, default: []], [])
        XCTAssertEqual(bench.state.ipv6.connectivity, .none)
        XCTAssertEqual(bench.state.ipv6.reason, "AddressFamily is ipv4")
        XCTAssertEqual(bench.state.connectivity, .full)
        XCTAssertEqual(bench.state.address, Self.v4.description)
    }

    /// A name without an IPv6 address: that family is none, with the reason, and never limited.
    func testNoAddressInAFamilyIsNone() {
        var bench = Bench()
        bench.start(addresses: [Self.v4])
        bench.run(until: 5000 * ms)
        XCTAssertEqual(bench.state.ipv6.connectivity, .none)
        XCTAssertEqual(bench.state.ipv6.reason, "no IPv6 address for dual.test")
        XCTAssertEqual(bench.sent[.v6, default: []], [])
        XCTAssertEqual(bench.state.connectivity, .full)
    }

    /// No family full: the headline waits while one has no verdict yet, then takes the best.
    func testTheHeadlineWaitsForEveryFamilyUnlessOneIsFull() {
        var states: [IPFamily: MonitorState] = [:]
        var limited = MonitorState()
        limited.connectivity = .limited
        var unknown = MonitorState()
        unknown.connectivity = .unknown
        var none = MonitorState()
        none.connectivity = .none
        var full = MonitorState()
        full.connectivity = .full
        states = [.v4: limited, .v6: unknown]
        XCTAssertEqual(TargetCore.headline(order: [.v4, .v6]) { states[$0]?.connectivity }, .v6)
        states = [.v4: limited, .v6: none]
        XCTAssertEqual(TargetCore.headline(order: [.v6, .v4]) { states[$0]?.connectivity }, .v4)
        states = [.v4: none, .v6: none]
        XCTAssertEqual(TargetCore.headline(order: [.v6, .v4]) { states[$0]?.connectivity }, .v6)
        states = [.v4: unknown, .v6: full]
        XCTAssertEqual(TargetCore.headline(order: [.v4, .v6]) { states[$0]?.connectivity }, .v6)
    }

    /// A Check probes every family and is answered once each has its verdict.
    func testACheckWaitsForEveryFamily() {
        var bench = Bench()
        bench.start()
        bench.run(until: 3000 * ms)
        let readyBefore = bench.ready
        bench.answering[.v4] = false
        XCTAssertTrue(bench.check())
        bench.run(until: bench.now + 2 * ms)
        XCTAssertEqual(bench.ready, readyBefore, "the Check was answered before IPv4's probe ended")
        bench.run(until: bench.now + 600 * ms)
        XCTAssertGreaterThan(bench.ready, readyBefore)
        XCTAssertTrue(bench.brokenContract.isEmpty, "\(bench.brokenContract)")
    }

    /// Checks that keep coming while the families answer in turn (a fast IPv6, a slow IPv4) never keep the
    /// verdict from being ready: each family's answer counts for the Checks that came while another was
    /// still awaited (its next probe is held back a Timeout anyway), so every Check is answered within two
    /// Timeouts. (Found by the simulation's dual-stack scenarios: the verdict waited as long as Checks came.)
    func testChecksArrivingBetweenTheFamiliesAnswersNeverStarveTheVerdict() {
        var bench = Bench(timeout: 100)
        bench.rtts = [.v6: 2 * ms, .v4: 20 * ms]
        bench.start()
        bench.run(until: 3000 * ms)
        var lastReady = bench.now
        var ready = bench.ready
        var longest = Duration.zero
        for _ in 0..<300 {
            XCTAssertTrue(bench.check())
            bench.run(until: bench.now + 7 * ms)
            if bench.ready > ready {
                ready = bench.ready
                lastReady = bench.now
            }
            longest = max(longest, bench.now - lastReady)
        }
        XCTAssertLessThanOrEqual(longest, 200 * ms, "a Check waited past two Timeouts")
        XCTAssertGreaterThanOrEqual(ready, 10)
        XCTAssertTrue(bench.brokenContract.isEmpty, "\(bench.brokenContract)")
    }

    /// A Host with no IPv6 address (an IPv4 literal): Nat64Prefix is the prefix the routers advertise on the
    /// network its IPv4 route uses, and IPv4 stays native while it has a route of its own.
    func testAnIPv4HostPublishesThePrefixOfItsRoutesNetwork() {
        var core = TargetCore(host: "198.18.2.2", family: .any, probeSettings: ProbeSettings(), seed: 3)
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([Self.v4]), routedFamilies: [.v4, .v6]), now: 0)
        let route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.1.1")
        let actions = core.handle(.path(.v4, Self.route(route.routed([.v4, .v6]), advertising: Self.prefix64)), now: 1)
        XCTAssertTrue(actions.contains(.publish), "\(actions)")
        let state = core.state(previous: MonitorState())
        XCTAssertEqual(state.nat64Prefix, "\(Self.prefix64)")
        XCTAssertEqual(state.nat64Source, .ra)
        XCTAssertEqual(state.ipv4Path, .native)
        _ = core.handle(.path(.v4, Self.route(route.routed([.v4, .v6]), advertising: nil)), now: 2)
        XCTAssertEqual(core.state(previous: state).nat64Prefix, "", "withdrawn with the route's word")
    }

    /// NAT64: with no IPv4 default route and a prefix on the IPv6 route's network, the IPv4 address
    /// is probed at its synthesized address; Address4 stays the IPv4 one. An IPv4 route back: natively.
    func testWithoutAnIPv4RouteIPv4GoesThroughTheAdvertisedPrefix() throws {
        var core = TargetCore(host: "198.18.2.2", family: .any, probeSettings: ProbeSettings(), seed: 3)
        let prefix = Nat64Prefix(
            prefix: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 0x64] + [UInt8](repeating: 0, count: 10)), length: 96)
        let synthesized = try XCTUnwrap(prefix.synthesize(Self.v4))
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([Self.v4]), routedFamilies: [.v6]), now: 0)
        _ = core.handle(
            .path(.v4, .route(ReachabilityVerdict(usable: false, reason: "no route to 198.18.2.2").routed([.v6]))),
            now: 0)
        let ipv6Route = ReachabilityVerdict(usable: true, interface: "wlan0", kind: .wifi, source: "2001:db8:1::2")
        let actions = core.handle(.path(.v6, Self.route(ipv6Route.routed([.v6]), advertising: prefix)), now: 1)
        XCTAssertTrue(actions.contains(.path(.v4, .probe(synthesized))), "\(actions)")
        XCTAssertTrue(actions.contains(.path(.v4, .watchRoute(synthesized))), "\(actions)")
        var state = core.state(previous: MonitorState())
        XCTAssertEqual(state.nat64Prefix, "2001:db8:64::/96")
        XCTAssertEqual(state.nat64Source, .ra)
        XCTAssertEqual(state.ipv4.address, "198.18.2.2")
        XCTAssertFalse(
            actions.contains { if case .resolveNat64 = $0 { true } else { false } }, "the router said: no lookup")

        _ = core.handle(.path(.v4, .route(ipv6Route.routed([.v6]))), now: 2)
        state = core.state(previous: MonitorState())
        XCTAssertEqual(state.ipv4Path, .nat64)

        let back = core.handle(.path(.v6, Self.route(ipv6Route.routed([.v4, .v6]), advertising: prefix)), now: 3)
        XCTAssertTrue(back.contains(.path(.v4, .probe(Self.v4))), "an IPv4 route: natively again: \(back)")
    }

    static let prefix64 = Nat64Prefix(
        prefix: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 0x64] + [UInt8](repeating: 0, count: 10)), length: 96)
    static let otherPrefix64 = Nat64Prefix(
        prefix: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 0x65] + [UInt8](repeating: 0, count: 10)), length: 96)

    /// An IPv6-only network: an IPv4 literal Host, no IPv4 route, the IPv6 route with `prefix` advertised (nil: none).
    func ipv6Only(_ bench: inout Bench, prefix: Nat64Prefix?) {
        let route = ReachabilityVerdict(usable: true, interface: "wlan0", kind: .wifi, source: "2001:db8:1::2")
        bench.handle(.path(.v6, Self.route(route.routed([.v6]), advertising: prefix)))
    }

    /// The route's verdict with the view of its link (as the service hands it), whose routers advertise `prefix`.
    static func route(_ verdict: ReachabilityVerdict, advertising prefix: Nat64Prefix?) -> PathEvidence {
        .route(
            verdict, link: LinkView(id: LinkID(index: 2, generation: 1), name: verdict.interface, nat64Prefix: prefix))
    }

    /// A bench for an IPv4 literal Host on a network whose IPv4 has no route (the IPv6 route's word still to come).
    func ipv4LiteralWithoutIPv4Route(family: AddressFamily, seed: UInt64) -> Bench {
        var bench = Bench(family: family)
        bench.core = TargetCore(host: "198.18.2.2", family: family, probeSettings: ProbeSettings(), seed: seed)
        bench.handle(.start(checkURL: ""))
        bench.handle(.resolved(generation: 0, .success([Self.v4]), routedFamilies: [.v6]))
        bench.handle(
            .path(.v4, .route(ReachabilityVerdict(usable: false, reason: "no route to 198.18.2.2").routed([.v6]))))
        return bench
    }

    /// What `ipv4only.arpa` answers where DNS64 synthesizes with `prefix`.
    func ipv4onlyAnswer(_ prefix: Nat64Prefix) throws -> [IPAddress] {
        [try XCTUnwrap(prefix.synthesize(.v4([192, 0, 0, 170])))]
    }

    /// Issue 45 item 8: on a DNS64-only network, while the first `ipv4only.arpa` query is out, IPv4 is `unknown`,
    /// never `none` (it was published 6 ms before the answer), and the query's limit ends the wait.
    func testIPv4IsUnknownWhileTheFirstIpv4onlyArpaQueryIsOut() throws {
        var bench = ipv4LiteralWithoutIPv4Route(family: .any, seed: 5)
        let asked = bench.core.handle(
            .path(
                .v6,
                .route(
                    ReachabilityVerdict(
                        usable: true, interface: "wlan0", kind: .wifi,
                        source: "2001:db8:1::2"
                    ).routed([.v6]))), now: bench.now)
        let generation = try XCTUnwrap(asked.compactMap { if case .resolveNat64(let g) = $0 { g } else { nil } }.first)
        bench.state = bench.core.state(previous: bench.state)
        XCTAssertEqual(bench.state.ipv4.connectivity, .unknown, "no verdict before the answer")
        XCTAssertNotEqual(bench.state.connectivity, .none)
        bench.run(until: 6 * ms)
        bench.handle(.nat64Resolved(generation: generation, .success(try ipv4onlyAnswer(Self.prefix64))))
        // The route watch's word on the synthesized address.
        bench.handle(
            .path(
                .v4,
                .route(
                    ReachabilityVerdict(usable: true, interface: "wlan0", kind: .wifi, source: "2001:db8:1::2").routed([
                        .v6
                    ]
                    ))))
        bench.run(until: 100 * ms)
        XCTAssertEqual(bench.state.ipv4.connectivity, .full)
        XCTAssertEqual(bench.state.nat64Source, .dns)
        XCTAssertFalse(bench.published.contains { $0.1 == .none }, "\(bench.published)")

        // A query that is never answered ends at its limit, max(5 s, Timeout): then IPv4 has no way, and says so.
        var silent = ipv4LiteralWithoutIPv4Route(family: .ipv4, seed: 6)
        ipv6Only(&silent, prefix: nil)
        silent.run(until: 4_900 * ms)
        XCTAssertEqual(silent.state.connectivity, .unknown)
        silent.run(until: 5_100 * ms)
        XCTAssertEqual(silent.state.connectivity, .none, "the limit ends the wait")
    }

    /// Issue 45 item 7: a NAT64 prefix that changes, or that the router withdraws while DNS64 still works, never
    /// takes a target that had a verdict through `unknown` or a false `none`: the old prefix stays while
    /// `ipv4only.arpa` is asked again, and the verdict goes from one to the next.
    func testANat64PrefixChangeOrWithdrawalNeverBlipsThroughUnknown() throws {
        var bench = ipv4LiteralWithoutIPv4Route(family: .ipv4, seed: 7)
        ipv6Only(&bench, prefix: Self.prefix64)
        let synthesized = ReachabilityVerdict(usable: true, interface: "wlan0", kind: .wifi, source: "2001:db8:1::2")
        bench.handle(.path(.v4, .route(synthesized.routed([.v6]))))
        bench.run(until: 3_000 * ms)
        XCTAssertEqual(bench.state.connectivity, .full)
        let fullAt = bench.published.count
        // The router advertises another prefix.
        ipv6Only(&bench, prefix: Self.otherPrefix64)
        bench.handle(.path(.v4, .route(synthesized.routed([.v6]))))
        bench.run(until: 6_000 * ms)
        XCTAssertEqual(bench.state.nat64Prefix, "2001:db8:65::/96")
        // The router withdraws it; DNS64 still answers.
        let withdrawn = bench.core.handle(
            .path(
                .v6,
                .route(
                    ReachabilityVerdict(
                        usable: true, interface: "wlan0", kind: .wifi,
                        source: "2001:db8:1::2"
                    ).routed([.v6]))), now: bench.now)
        let generation = try XCTUnwrap(
            withdrawn.compactMap { if case .resolveNat64(let g) = $0 { g } else { nil } }.first,
            "ipv4only.arpa is asked again before the path is dropped: \(withdrawn)")
        XCTAssertFalse(withdrawn.contains(.path(.v4, .probe(Self.v4))), "the path is not dropped before the answer")
        bench.state = bench.core.state(previous: bench.state)
        XCTAssertEqual(bench.state.connectivity, .full)
        bench.run(until: 6_007 * ms)
        bench.handle(.nat64Resolved(generation: generation, .success(try ipv4onlyAnswer(Self.prefix64))))
        bench.handle(.path(.v4, .route(synthesized.routed([.v6]))))
        bench.run(until: 9_000 * ms)
        XCTAssertEqual(bench.state.connectivity, .full)
        XCTAssertEqual(bench.state.nat64Source, .dns)
        let after = bench.published.dropFirst(fullAt - 1).map(\.1)
        XCTAssertFalse(after.contains(.unknown) || after.contains(.none), "published after the first verdict: \(after)")
    }

    /// No advertisement, no IPv4 route: ipv4only.arpa is asked once for the network, its answer gives the prefix.
    func testWithoutAnAdvertisementThePrefixIsAskedOfDNSOncePerNetwork() throws {
        var core = TargetCore(host: "198.18.2.2", family: .any, probeSettings: ProbeSettings(), seed: 3)
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([Self.v4]), routedFamilies: [.v6]), now: 0)
        let route = ReachabilityVerdict(usable: true, interface: "wlan0", kind: .wifi, source: "2001:db8:1::2")
        let asked = core.handle(.path(.v6, .route(route.routed([.v6]))), now: 1)
        let lookups = asked.compactMap { if case .resolveNat64(let generation) = $0 { generation } else { nil } }
        XCTAssertEqual(lookups.count, 1, "\(asked)")
        let again = core.handle(.path(.v6, .route(route.routed([.v6]))), now: 2)
        XCTAssertFalse(again.contains { if case .resolveNat64 = $0 { true } else { false } }, "once per network")
        let prefix = Nat64Prefix(
            prefix: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 0x64] + [UInt8](repeating: 0, count: 10)), length: 96)
        let answer = try XCTUnwrap(prefix.synthesize(.v4([192, 0, 0, 170])))
        let learned = core.handle(.nat64Resolved(generation: try XCTUnwrap(lookups.first), .success([answer])), now: 3)
        XCTAssertTrue(learned.contains(.path(.v4, .probe(try XCTUnwrap(prefix.synthesize(Self.v4))))), "\(learned)")
        XCTAssertEqual(core.state(previous: MonitorState()).nat64Source, .dns)
        let hourLater = core.handle(.timeout, now: 1 + TargetCore.nat64Discovery)
        XCTAssertTrue(hourLater.contains { if case .resolveNat64 = $0 { true } else { false } }, "asked again hourly")
    }

    /// Issue 54 item 2: NetworkManager deletes and adds the IPv6 default route when the router's preference changes.
    /// The advertised prefix outlives the route by 2 s, so the replacement publishes no change of it; a route gone
    /// for good drops it 2 s later.
    func testAnAdvertisedPrefixOutlivesItsReplacedRouteByTwoSeconds() throws {
        var core = TargetCore(host: "2001:db8:2::2", family: .ipv6, probeSettings: ProbeSettings(), seed: 3)
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([Self.v6]), routedFamilies: [.v6]), now: 0)
        let route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "2001:db8:1::2")
        _ = core.handle(.path(.v6, Self.route(route.routed([.v6]), advertising: Self.prefix64)), now: 1 * ms)
        XCTAssertEqual(core.state(previous: MonitorState()).nat64Prefix, "\(Self.prefix64)")
        let gone = ReachabilityVerdict(usable: false, reason: "no route to 2001:db8:2::2")
        _ = core.handle(.path(.v6, .route(gone.routed([]))), now: 100 * ms)
        XCTAssertEqual(core.state(previous: MonitorState()).nat64Prefix, "\(Self.prefix64)", "a route replaced")
        _ = core.handle(.path(.v6, Self.route(route.routed([.v6]), advertising: Self.prefix64)), now: 110 * ms)
        XCTAssertEqual(core.nextWakeup.map { $0 > 2_100 * ms } ?? true, true, "no wake-up left for the kept prefix")
        _ = core.handle(.path(.v6, .route(gone.routed([]))), now: 5_000 * ms)
        _ = core.handle(.timeout, now: 6_999 * ms)
        XCTAssertEqual(core.state(previous: MonitorState()).nat64Prefix, "\(Self.prefix64)")
        _ = core.handle(.timeout, now: 7_000 * ms)
        XCTAssertEqual(core.state(previous: MonitorState()).nat64Prefix, "", "gone for 2 s: gone")
    }

    /// Issue 54 item 8: on a NAT64 network every announcement and every withdrawal of the prefix moved the IPv4 path
    /// to another address through `unknown` ("waiting for the kernel's route to …"). Once a verdict exists it goes
    /// from one verdict to the next: `none` to `full` when the prefix comes, `full` to `none` when it goes.
    func testAPrefixAnnouncedOrWithdrawnGoesFromOneVerdictToTheNext() throws {
        var bench = ipv4LiteralWithoutIPv4Route(family: .ipv4, seed: 11)
        ipv6Only(&bench, prefix: nil)
        // No prefix: `ipv4only.arpa` is asked (unanswered here) until its limit, then IPv4 has no way.
        bench.run(until: 6_000 * ms)
        XCTAssertEqual(bench.state.connectivity, .none)
        let first = bench.published.count
        for round in 0..<3 {
            let start = UInt64(6_000 + round * 6_000)
            ipv6Only(&bench, prefix: Self.prefix64)
            let synthesized = ReachabilityVerdict(
                usable: true, interface: "wlan0", kind: .wifi, source: "2001:db8:1::2")
            bench.run(until: (start + 3) * ms)
            bench.handle(.path(.v4, Self.route(synthesized.routed([.v6]), advertising: Self.prefix64)))
            bench.run(until: (start + 3_000) * ms)
            XCTAssertEqual(bench.state.connectivity, .full, "round \(round)")
            ipv6Only(&bench, prefix: nil)
            bench.run(until: (start + 3_003) * ms)
            bench.handle(
                .path(.v4, .route(ReachabilityVerdict(usable: false, reason: "no route to 198.18.2.2").routed([.v6]))))
            bench.run(until: (start + 6_000) * ms)
            XCTAssertEqual(bench.state.connectivity, .none, "round \(round)")
        }
        let after = bench.published.dropFirst(first).map(\.1)
        XCTAssertFalse(after.contains(.unknown), "published after the first verdict: \(after)")
    }

    /// Issue 54 item 7: an `ipv4only.arpa` answer under the interface's own on-link prefix was taken as the NAT64
    /// prefix, and IPv4 "reached" through it (the link itself). Refused, from DNS too, as from a router.
    func testADiscoveredPrefixOnTheLinkItselfIsRefused() throws {
        var core = TargetCore(host: "198.18.2.2", family: .any, probeSettings: ProbeSettings(), seed: 3)
        _ = core.handle(.start(checkURL: ""), now: 0)
        _ = core.handle(.resolved(generation: 0, .success([Self.v4]), routedFamilies: [.v6]), now: 0)
        var route = ReachabilityVerdict(usable: true, interface: "wlan0", kind: .wifi, source: "2001:db8:1::2")
        let own = IPAddress.v6([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 9) + [2])
        route.onLinkIPv6 = [OnLinkNetwork(address: own, length: 64)]
        let asked = core.handle(.path(.v6, .route(route.routed([.v6]))), now: 1)
        let generation = try XCTUnwrap(
            asked.compactMap { if case .resolveNat64(let generation) = $0 { generation } else { nil } }.first)
        let onLink = Nat64Prefix(
            prefix: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 10)), length: 96)
        let answer = try XCTUnwrap(onLink.synthesize(.v4([192, 0, 0, 170])))
        let learned = core.handle(.nat64Resolved(generation: generation, .success([answer])), now: 3)
        XCTAssertFalse(
            learned.contains(.path(.v4, .probe(try XCTUnwrap(onLink.synthesize(Self.v4))))),
            "probed on the link: \(learned)")
        let state = core.state(previous: MonitorState())
        XCTAssertNil(state.nat64Source)
        XCTAssertEqual(state.nat64Prefix, "")
    }
}
