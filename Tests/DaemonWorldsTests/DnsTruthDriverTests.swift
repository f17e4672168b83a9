@testable import DaemonWorlds
import EventLoop
import MonitorRules
import NetAddress
import Probe
import ProbeRules
import ReachabilityRules
import Synchronization
import Timekeeping
import XCTest

/// DNS truth in the daemon's world, on an injected clock with an asker the test answers: what the answers do
/// to the target's verdict, and one interception question for the targets on one network.
final class DnsTruthDriverTests: XCTestCase {
    typealias Fakes = ConnectivityMonitorDriverTests

    final class FakeAsker: DnsAsking {
        private(set) var questions: [(question: DnsQuestion, interface: String, answer: (DnsReply) -> Void)] = []
        func ask(
            _ question: DnsQuestion, interface: String, limitSeconds: UInt32, completion: @escaping (DnsReply) -> Void
        ) {
            questions.append((question, interface, completion))
        }
        func asked(_ kind: DnsQuestionKind) -> Int { questions.filter { $0.question.kind == kind }.count }
        /// Answers every question not yet answered of `kind`.
        func answer(_ kind: DnsQuestionKind, _ outcome: DnsOutcome) {
            let pending = questions.indices.filter { questions[$0].question.kind == kind }
            for index in pending { questions[index].answer(DnsReply(outcome: outcome, server: "198.18.0.53")) }
            questions.removeAll { $0.question.kind == kind }
        }
    }

    final class Clock: Sendable { let nanoseconds = Atomic<UInt64>(1_000_000_000) }

    let clock = Clock()
    var loop: MainLoop!
    let eth0 = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.9")

    override func setUpWithError() throws {
        let clock = self.clock
        loop = try MainLoop(clock: { Instant(nanoseconds: clock.nanoseconds.load(ordering: .relaxed)) })
    }

    func advance(milliseconds: UInt64) {
        for _ in 0..<milliseconds / 10 {
            clock.nanoseconds.add(10_000_000, ordering: .relaxed)
            loop.runDueWork()
        }
    }

    func turn(until done: () -> Bool) {
        for _ in 0..<200 where !done() { loop.runTurn(waitingAtMost: 5_000_000) }
    }

    /// A target on eth0 whose host answers every probe, its DNS truth asked of `asker`.
    func target(
        _ asker: FakeAsker, book: InterceptionBook, host: String = "a.test"
    ) throws -> (ConnectivityMonitor, TestModel, Fakes.FakeRouteWatch) {
        let model = TestModel(host: host, probe: ProbeSettings(timeoutMilliseconds: 500))
        let routes = Fakes.FakeRouteWatch()
        let transport = Fakes.FakeTransport(.answerAtOnce)
        let monitor = try ConnectivityMonitor(
            loop: loop, model: model, resolver: try HostResolver(loop: loop, lookup: Fakes.lookup),
            transports: [transport, Fakes.FakeTransport(.silent)], routeWatches: [routes, Fakes.FakeRouteWatch()],
            dnsAsking: asker, interceptions: book)
        monitor.start()
        turn { transport.target != nil }
        routes.say(eth0)
        turn { model.state.connectivity == .full }
        advance(milliseconds: 10)
        return (monitor, model, routes)
    }

    func testTwoFailedFreshLookupsMakeTheTargetLimitedWithBlameDNSUntilOneSucceeds() throws {
        let asker = FakeAsker()
        let (monitor, model, _) = try target(asker, book: InterceptionBook(loop: loop))
        XCTAssertEqual(asker.asked(.host), 1, "the first verdict starts DNS truth")
        XCTAssertEqual(asker.questions.first?.interface, "eth0")
        asker.answer(.interception, .nxdomain)
        asker.answer(.host, .servfail)
        loop.runDueWork()
        XCTAssertEqual(model.state.connectivity, .full, "one failure is not an outage")
        advance(milliseconds: 5_000)
        XCTAssertEqual(asker.asked(.host), 1, "asked again 5 s after the first began")
        asker.answer(.host, .noAnswer("timed out"))
        advance(milliseconds: 10)
        XCTAssertEqual(model.state.dns.health, .failing)
        XCTAssertEqual(model.state.connectivity, .limited)
        XCTAssertEqual(model.state.blame, .dns)
        XCTAssertEqual(
            model.state.reason,
            "DNS fails: new lookups of a.test: no answer (timed out) (cached answers may still work)")
        advance(milliseconds: 5_000)
        asker.answer(.host, .addresses([.v4([198, 18, 0, 2])]))
        advance(milliseconds: 10)
        XCTAssertEqual(model.state.dns.health, .ok)
        XCTAssertEqual(model.state.connectivity, .full)
        XCTAssertNil(model.state.blame)
        XCTAssertEqual(model.state.dns.server, "198.18.0.53")
        withExtendedLifetime(monitor) {}
    }

    func testTargetsOnOneNetworkShareTheInterceptionQuestion() throws {
        let asker = FakeAsker()
        let book = InterceptionBook(loop: loop)
        let first = try target(asker, book: book)
        let second = try target(asker, book: book)
        XCTAssertEqual(asker.asked(.interception), 1, "one question for both targets on eth0")
        XCTAssertEqual(asker.asked(.host), 2, "each its own fresh lookup")
        asker.answer(.interception, .addresses([.v4([198, 18, 0, 99])]))
        advance(milliseconds: 10)
        XCTAssertEqual(first.1.state.dns.health, .intercepted)
        XCTAssertEqual(second.1.state.dns.health, .intercepted)
        XCTAssertEqual(first.1.state.connectivity, .full, "interception informs, never changes Connectivity")
        // A third target on the same network within the hour takes the answer without asking.
        let third = try target(asker, book: book)
        advance(milliseconds: 10)
        XCTAssertEqual(asker.asked(.interception), 0)
        XCTAssertEqual(third.1.state.dns.health, .intercepted)
        withExtendedLifetime([first.0, second.0, third.0]) {}
    }
}
