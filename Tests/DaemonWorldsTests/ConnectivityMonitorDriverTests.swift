import DaemonWorlds
import EventLoop
import HTTPCheck
import IntegrationSupport
import MonitorRules
import NetAddress
import NetCore
import Probe
import ProbeRules
import Reachability
import ReachabilityRules
import Synchronization
import TestTime
import Timekeeping
import TrafficCensus
import XCTest

/// The daemon's driver around `TargetCore`, without root, sockets or a network: a loop on a
/// clock the test advances, a transport and a route watch the test plays, a resolver whose
/// lookup the test answers. What it shows: the driver carries out what the core asks, hands
/// back what happens, even from inside its own calls, after the actions that caused it, and
/// publishes once per event.
final class ConnectivityMonitorDriverTests: XCTestCase {
    final class FakeTransport: ProbeTransporting {
        enum Behaviour { case answerAtOnce, failAtOnce, silent }
        var behaviour: Behaviour
        var onInput: (ProbeInput) -> Void = { _ in }
        var isOutstanding: (UInt16) -> Bool = { _ in false }
        private(set) var target: IPAddress?
        let slot: UInt16? = nil
        var stride: UInt16 { 1 }
        private(set) var sent: [(sequence: UInt16, token: UInt64)] = []
        /// Whether the driver was still inside an earlier input when a new one came (it must not be).
        private(set) var inputsInsideInputs = 0
        private var delivering = false

        init(_ behaviour: Behaviour) { self.behaviour = behaviour }

        func retarget(_ address: IPAddress?) -> ProbeMethod? {
            target = address
            return .icmpDatagram
        }

        func send(sequence: UInt16, token: UInt64, alsoTCP: Bool) {
            sent.append((sequence, token))
            switch behaviour {
            case .answerAtOnce: deliver(.reply(sequence: sequence, token: token, via: .icmp))
            case .failAtOnce:
                deliver(
                    .sendFailed(sequence: sequence, transient: false, reason: "cannot send: Network is unreachable"))
            case .silent: break
            }
        }

        func deliver(_ input: ProbeInput) {
            if delivering { inputsInsideInputs += 1 }
            delivering = true
            onInput(input)
            delivering = false
        }

        func forgetFinished() {}
    }

    final class FakeRouteWatch: RouteWatch {
        var target: IPAddress?
        var families: [IPFamily] = []
        var verdict: ReachabilityVerdict?
        var table = LinkTable()
        var onChange: (ReachabilityVerdict) -> Void = { _ in }

        func say(_ new: ReachabilityVerdict) {
            verdict = new
            onChange(new)
        }
    }

    /// The HTTP client behind the check: it records each GET and answers when the test says.
    final class FakeHTTP: HTTPClientSource, HTTPGetting {
        final class Transfer: HTTPTransfer {
            let url: String
            let pin: HTTPClient.Pin?
            let timeoutMilliseconds: Int
            private(set) var cancelled = false
            private var completion: ((CheckAnswer) -> Void)?

            init(
                url: String, pin: HTTPClient.Pin?, timeoutMilliseconds: Int, completion: @escaping (CheckAnswer) -> Void
            ) {
                self.url = url
                self.pin = pin
                self.timeoutMilliseconds = timeoutMilliseconds
                self.completion = completion
            }

            func cancel() {
                cancelled = true
                completion = nil
            }

            func answer(_ answer: CheckAnswer) {
                let completion = self.completion
                self.completion = nil
                completion?(answer)
            }
        }

        var getter: (any HTTPGetting)? { self }
        let failure: String? = nil
        private(set) var transfers: [Transfer] = []

        func startGet(
            _ url: String, pinnedTo pin: HTTPClient.Pin?, timeoutMilliseconds: Int, options: HTTPRequestOptions,
            completion: @escaping (CheckAnswer) -> Void
        ) -> (any HTTPTransfer)? {
            let transfer = Transfer(
                url: url, pin: pin, timeoutMilliseconds: timeoutMilliseconds, completion: completion)
            transfers.append(transfer)
            return transfer
        }
    }

    final class TestClock: Sendable {
        let nanoseconds = Atomic<UInt64>(1_000_000_000)
    }

    let clock = TestClock()
    var loop: MainLoop!
    var model: TestModel!
    var routes: FakeRouteWatch!
    /// The IPv6 path's: the test's names have IPv4 addresses only, so nothing is sent on it.
    let transport6 = FakeTransport(.silent)
    let routes6 = FakeRouteWatch()
    var updates = 0
    var monitor: ConnectivityMonitor?
    let eth0 = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.9")

    override func setUpWithError() throws {
        let clock = self.clock
        loop = try MainLoop(clock: { Instant(nanoseconds: clock.nanoseconds.load(ordering: .relaxed)) })
        model = TestModel(host: "a.test", probe: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 500))
        model.onChange = { [unowned self] in updates += 1 }
        routes = FakeRouteWatch()
    }

    /// A monitor over `transport`, started, once its first lookup is answered and the transport pointed at the address.
    /// The test holds it (the loop's callbacks hold it unowned).
    @discardableResult
    func startMonitor(
        _ transport: FakeTransport, http: FakeHTTP? = nil,
        lookup: @escaping HostResolver.Lookup = ConnectivityMonitorDriverTests.lookup
    ) throws -> ConnectivityMonitor {
        let resolver = try HostResolver(loop: loop, lookup: lookup)
        let monitor = try ConnectivityMonitor(
            loop: loop, model: model, resolver: resolver, http: http,
            transports: [transport, transport6], routeWatches: [routes, routes6])
        monitor.start()
        turn { transport.target != nil }
        self.monitor = monitor
        return monitor
    }

    /// The model again, with CheckURL set (before the monitor starts).
    func useCheckURL(_ url: String) {
        model = TestModel(host: model.configuration.host, probe: model.configuration.probe, checkURL: url)
        model.onChange = { [unowned self] in updates += 1 }
    }

    static let lookup: HostResolver.Lookup = { host, _ in
        switch host {
        case "a.test": .success([.v4([198, 18, 0, 2])])
        case "check.test": .success([.v4([198, 18, 0, 80])])
        default: .failure(HostResolver.Failure(message: "cannot resolve \(host): NXDOMAIN"))
        }
    }

    /// Turns of the loop until `done` (the resolver answers from its own thread), at most a second of real time.
    func turn(until done: () -> Bool) {
        for _ in 0..<200 where !done() { loop.runTurn(waitingAtMost: 5_000_000) }
    }

    func advance(milliseconds: UInt64) {
        for _ in 0..<milliseconds / 10 {
            clock.nanoseconds.add(10_000_000, ordering: .relaxed)
            loop.runDueWork()
        }
    }

    func testAnAnswerFromInsideSendIsTakenAfterTheSendAndPublishedOnce() throws {
        let transport = FakeTransport(.answerAtOnce)
        try startMonitor(transport)
        XCTAssertEqual(transport.target, .v4([198, 18, 0, 2]))
        XCTAssertEqual(routes.target, .v4([198, 18, 0, 2]), "the route watch follows the address the core chose")
        let before = updates
        routes.say(eth0)
        // Two events (the route, and the answer the probe it set off drew at once): two publications at most.
        XCTAssertLessThanOrEqual(updates - before, 2)
        XCTAssertEqual(transport.inputsInsideInputs, 0)
        XCTAssertEqual(model.state.status, .ethernet, model.state.reason)
        XCTAssertEqual(model.state.interface, "eth0")
        XCTAssertEqual(model.state.address, "198.18.0.2")
        XCTAssertEqual(model.state.probeMethod, "icmp")
        XCTAssertEqual(
            transport.sent.count, 1, "the first probe of the new target, answered: the first route known sends no other"
        )
        // On schedule from here: one probe an Interval, each answered at once.
        advance(milliseconds: 3_000)
        XCTAssertEqual(transport.sent.count, 4)
        XCTAssertEqual(model.state.status, .ethernet)
    }

    func testSilenceIsConfirmedOnTheInjectedClockAndNothingMoreIsSent() throws {
        let transport = FakeTransport(.silent)
        try startMonitor(transport)
        let before = updates
        routes.say(eth0)
        XCTAssertLessThanOrEqual(updates - before, 1, "one event, one publication at most")
        XCTAssertEqual(model.state.connectivity, .unknown)
        advance(milliseconds: 1_600)
        // Probes at 0 (with the route gained's beside it) and 1 s; lost at 0.5 s and 1.5 s: FailureThreshold 2.
        XCTAssertEqual(model.state.connectivity, .limited, model.state.reason)
        XCTAssertEqual(model.state.status, .none)
        XCTAssertTrue(model.state.reason.contains("not answering"), model.state.reason)
        XCTAssertLessThanOrEqual(transport.sent.count, 3, "the schedule, and one for the route gained")
        // An answer brings it back at once.
        let last = try XCTUnwrap(transport.sent.last)
        advance(milliseconds: 500)
        let next = try XCTUnwrap(transport.sent.last)
        XCTAssertNotEqual(next.sequence, last.sequence)
        transport.deliver(.reply(sequence: next.sequence, token: next.token, via: .icmp))
        XCTAssertEqual(model.state.status, .ethernet, model.state.reason)
    }

    func testAFailedSendIsARefusalTakenAfterTheActionsThatCausedIt() throws {
        let transport = FakeTransport(.failAtOnce)
        try startMonitor(transport)
        routes.say(eth0)
        XCTAssertEqual(transport.inputsInsideInputs, 0)
        XCTAssertEqual(model.state.status, .none)
        XCTAssertTrue(model.state.reason.contains("Network is unreachable"), model.state.reason)
    }

    /// A model of the worlds' own (no D-Bus settings behind it): what a target watches is a `TargetConfiguration`,
    /// and `configure` hands the driver exactly the part that changed.
    final class PlainModel: TargetModel {
        var configuration: TargetConfiguration
        var state = MonitorState()
        var isThisMachine: (IPAddress) -> Bool = { _ in false }
        var probeNow: (() -> Bool)?
        init(_ configuration: TargetConfiguration) { self.configuration = configuration }
        func update(_ change: (inout MonitorState) -> Void) { change(&state) }
    }

    func testAWorldRunsOnAModelOfItsOwnAndHearsEachPartThatChanged() throws {
        let plain = PlainModel(
            TargetConfiguration(
                host: "a.test", family: .ipv4,
                probe: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 500)))
        let transport = FakeTransport(.answerAtOnce)
        let monitor = try ConnectivityMonitor(
            loop: loop, model: plain, resolver: try HostResolver(loop: loop, lookup: Self.lookup),
            transports: [transport, transport6], routeWatches: [routes, routes6])
        monitor.start()
        turn { transport.target != nil }
        routes.say(eth0)
        XCTAssertEqual(plain.state.status, .ethernet, plain.state.reason)
        XCTAssertNotNil(plain.probeNow, "the world offers fresh verdicts through its model")
        // A new interval: probes at the new pace, the target kept.
        let before = transport.sent.count
        plain.configuration.probe.intervalMilliseconds = 200
        monitor.configure(plain.configuration, changed: .probe(timeoutChanged: false))
        advance(milliseconds: 1_000)
        XCTAssertGreaterThanOrEqual(transport.sent.count - before, 4, "a 200-ms interval over 1 s")
        XCTAssertEqual(transport.target, .v4([198, 18, 0, 2]))
        // A new Host: looked up again; it does not resolve.
        plain.configuration.host = "b.test"
        monitor.configure(plain.configuration, changed: .target)
        turn { plain.state.reason.contains("NXDOMAIN") }
        XCTAssertEqual(plain.state.status, .none, plain.state.reason)
        withExtendedLifetime(monitor) {}
    }

    func testANameThatStopsResolvingAfterAHostChangeLeavesNoAddress() throws {
        let transport = FakeTransport(.answerAtOnce)
        let monitor = try startMonitor(transport)
        routes.say(eth0)
        XCTAssertEqual(model.state.status, .ethernet)
        model.setHost("b.test")
        monitor.configure(model.configuration, changed: .target)
        turn { model.state.reason.contains("NXDOMAIN") }
        XCTAssertEqual(model.state.status, .none)
        XCTAssertEqual(model.state.address, "")
        XCTAssertNil(transport.target, "nothing is probed for a name that does not resolve")
    }

    // MARK: The check of CheckURL, behind a stand-in HTTP client

    /// The service resolves the URL's host itself and hands libcurl the address (pinned), so
    /// libcurl never starts a resolver of its own; a 204 makes Connectivity full.
    func testTheCheckResolvesTheNameItselfAndHandsTheAddressToTheClient() throws {
        let (_, transfer) = try startChecking("http://check.test/generate_204")
        XCTAssertEqual(transfer.url, "http://check.test/generate_204")
        XCTAssertEqual(transfer.pin?.host, "check.test")
        XCTAssertEqual(transfer.pin?.port, 80)
        XCTAssertEqual(transfer.pin?.address, "198.18.0.80")
        XCTAssertLessThanOrEqual(
            transfer.timeoutMilliseconds, 5_000, "what is left of the limit, the lookup's time spent")
        XCTAssertEqual(model.state.connectivity, .unknown)
        XCTAssertTrue(model.state.reason.hasPrefix("checking"), model.state.reason)
        transfer.answer(CheckAnswer(status: 204))
        XCTAssertEqual(model.state.connectivity, .full, model.state.reason)
        XCTAssertEqual(model.state.status, .ethernet)
    }

    /// A server that accepts and never answers: the check ends at its limit, max(5 s, Timeout), on
    /// the loop's clock; the transfer is cancelled and Connectivity is limited, never unknown past it.
    func testACheckThatNeverAnswersEndsAtItsLimitAndCancelsTheTransfer() throws {
        let (http, transfer) = try startChecking("http://198.18.0.80/generate_204")
        XCTAssertNil(transfer.pin, "an address needs no pinning")
        advance(milliseconds: 4_900)
        XCTAssertEqual(model.state.connectivity, .unknown, model.state.reason)
        XCTAssertFalse(transfer.cancelled)
        advance(milliseconds: 200)
        XCTAssertTrue(transfer.cancelled)
        XCTAssertEqual(model.state.connectivity, .limited, model.state.reason)
        XCTAssertEqual(model.state.reason, "check http://198.18.0.80/generate_204 failed: timed out")
        // A portal's redirect on the retry, 10 s later.
        advance(milliseconds: 10_000)
        let retry = try XCTUnwrap(http.transfers.last)
        XCTAssertFalse(retry === transfer)
        retry.answer(CheckAnswer(status: 302, location: "http://portal.test/login"))
        XCTAssertEqual(model.state.connectivity, .portal)
        XCTAssertEqual(model.state.portalURL, "http://portal.test/login")
    }

    /// A monitor with CheckURL `url` on a route (a new network: the check starts again), and the GET under way.
    func startChecking(_ url: String) throws -> (FakeHTTP, FakeHTTP.Transfer) {
        useCheckURL(url)
        let http = FakeHTTP()
        try startMonitor(FakeTransport(.answerAtOnce), http: http)
        routes.say(eth0)
        turn { http.transfers.last?.cancelled == false }
        return (http, try XCTUnwrap(http.transfers.last))
    }

    /// A lookup of the URL's host that hangs (a dead resolver): the loop goes on, and the check ends
    /// at its limit saying so; no GET is ever started.
    func testACheckWhoseLookupHangsEndsAtItsLimitWithoutAGet() throws {
        useCheckURL("http://check.test/generate_204")
        let http = FakeHTTP()
        let release = Release()
        let hanging = Self.hangingLookup(release)
        defer { release.done.store(true, ordering: .relaxed) }
        try startMonitor(FakeTransport(.answerAtOnce), http: http) { host, family in
            host == "check.test" ? hanging(host, family) : Self.lookup(host, family)
        }
        routes.say(eth0)
        XCTAssertEqual(model.state.reason, "checking http://check.test/generate_204")
        advance(milliseconds: 5_100)
        XCTAssertEqual(model.state.connectivity, .limited, model.state.reason)
        XCTAssertEqual(
            model.state.reason,
            "check http://check.test/generate_204 failed: cannot resolve check.test: no answer within 5 s")
        XCTAssertTrue(http.transfers.isEmpty)
        XCTAssertEqual(model.state.status, .none, "limited: the check failed while the host answers")
    }

    final class Release: Sendable {
        let done = Atomic<Bool>(false)
    }

    /// A lookup that blocks its thread until `release` (as a resolver nobody answers does).
    static func hangingLookup(_ release: Release) -> HostResolver.Lookup {
        { host, _ in
            while !release.done.load(ordering: .relaxed) { usleep(1_000) }
            return .failure(HostResolver.Failure(message: "cannot resolve \(host): no answer"))
        }
    }
}

/// The driver with the real census, without root: this process's own loopback connections are the
/// machine's traffic on the route to Host 127.0.0.1 over `lo`.
final class TrafficDriverTests: XCTestCase {
    func testTheMachinesOwnTrafficReachesTheModelAndStandsInForProbes() throws {
        let loop = try MainLoop()
        let model = TestModel(host: "loop.test", probe: ProbeSettings(intervalMilliseconds: 100, evidence: .traffic))
        let routes = ConnectivityMonitorDriverTests.FakeRouteWatch()
        let flags: UInt32 = 0x1 | 0x40 | 0x10000 // IFF_UP, IFF_RUNNING, IFF_LOWER_UP
        _ = routes.table.apply(.newLink(Link(index: 1, name: "lo", flags: flags, type: 772)))
        _ = routes.table.apply(.newAddress(InterfaceAddress(index: 1, address: .v4([127, 0, 0, 1]), prefixLength: 8)))
        let resolver = try HostResolver(loop: loop) { _, _ in .success([.v4([127, 0, 0, 1])]) }
        let transport = ConnectivityMonitorDriverTests.FakeTransport(.answerAtOnce)
        let monitor = try ConnectivityMonitor(
            loop: loop, model: model, resolver: resolver, trafficSampler: try TrafficSampler(loop: loop),
            transports: [transport, ConnectivityMonitorDriverTests.FakeTransport(.silent)],
            routeWatches: [routes, ConnectivityMonitorDriverTests.FakeRouteWatch()])
        monitor.start()
        func turn(seconds: UInt64 = 5, until done: () -> Bool) {
            let deadline = MonotonicClock.now() + seconds * 1_000_000_000
            while !done() && MonotonicClock.now() < deadline { loop.runTurn(waitingAtMost: 20_000_000) }
        }
        turn { transport.target != nil }
        routes.say(ReachabilityVerdict(usable: true, interface: "lo", kind: .other, source: "127.0.0.1"))
        turn { model.state.status == .other }
        XCTAssertEqual(model.state.traffic, .idle, "before the first sample, or with nothing flowing")
        let connections = try LoopbackConnections(count: 2)
        // Data keeps arriving: every 50 ms for a while.
        var flowed = false
        for _ in 0..<20 where !flowed {
            connections.exchange()
            turn(seconds: 1) { model.state.traffic == .flowing }
            flowed = model.state.traffic == .flowing
        }
        XCTAssertTrue(flowed, "Traffic is \(model.state.traffic)")
        let sent = transport.sent.count
        for _ in 0..<10 where model.state.probesSkipped < 3 {
            connections.exchange()
            turn(seconds: 1) { model.state.probesSkipped >= 3 }
        }
        XCTAssertGreaterThanOrEqual(model.state.probesSkipped, 3, "flowing traffic stands in for scheduled probes")
        XCTAssertEqual(model.state.probeMethod, "traffic")
        XCTAssertLessThanOrEqual(transport.sent.count - sent, 1)
        withExtendedLifetime((monitor, connections)) {}
    }
}
