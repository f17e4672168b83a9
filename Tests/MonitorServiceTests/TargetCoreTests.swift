import MonitorService
import NetCore
import Probe
import Reachability
import XCTest

/// The one core per target: events in, actions out, one publish per event, after every action
/// but the verdict being ready; nothing
/// sent before the transport says how it sends; the monitor and probe cores feed each other inside.
final class TargetCoreTests: XCTestCase {
    let ms: UInt64 = 1_000_000
    let address = IPAddress.v4([198, 18, 0, 2])
    let route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.9")

    func makeCore() -> TargetCore {
        TargetCore(host: "a.test", family: .ipv4, probeSettings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 200),
                   seed: 7)
    }

    /// At most one publish; after it, only the verdict being ready (once, last).
    func assertOnePublishAtMostAndLast(_ actions: [TargetCore.Action], file: StaticString = #filePath, line: UInt = #line) {
        let publishes = actions.indices.filter { actions[$0] == .publish }
        XCTAssertLessThanOrEqual(publishes.count, 1, "\(actions)", file: file, line: line)
        let ready = actions.indices.filter { actions[$0] == .verdictReady }
        XCTAssertLessThanOrEqual(ready.count, 1, "\(actions)", file: file, line: line)
        if let only = ready.first { XCTAssertEqual(only, actions.count - 1, "\(actions)", file: file, line: line) }
        if let only = publishes.first { XCTAssertEqual(only, actions.count - 1 - ready.count, "\(actions)", file: file, line: line) }
    }

    func sends(_ actions: [TargetCore.Action]) -> [(UInt16, UInt64)] {
        actions.compactMap { if case .send(let sequence, let token, _, _, _) = $0 { (sequence, token) } else { nil } }
    }

    /// Start → resolve; the answer → watch the route and probe the address, but no packet until
    /// `.probing`; then exactly one probe; its reply → the report changes and the state is published once.
    func testFromStartToAnAnsweringHost() throws {
        var core = makeCore()
        let started = core.handle(.start(checkURL: ""), now: 0)
        XCTAssertEqual(started, [.resolve(host: "a.test", family: .ipv4, generation: 0), .publish])
        let resolved = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [IPAddress.familyIPv4]), now: 5 * ms)
        assertOnePublishAtMostAndLast(resolved)
        XCTAssertTrue(resolved.contains(.watchRoute(address, families: [IPAddress.familyIPv4])), "\(resolved)")
        XCTAssertTrue(resolved.contains(.probe(address)), "\(resolved)")
        XCTAssertTrue(sends(resolved).isEmpty, "a probe went out before the transport could send: \(resolved)")
        let routed = core.handle(.route(route, routedFamilies: [IPAddress.familyIPv4]), now: 6 * ms)
        XCTAssertTrue(sends(routed).isEmpty, "the route regained probed before the transport was ready: \(routed)")
        assertOnePublishAtMostAndLast(routed)

        let probing = core.handle(.probing(.icmpDatagram), now: 7 * ms)
        let sent = sends(probing)
        XCTAssertEqual(sent.count, 1, "\(probing)")
        assertOnePublishAtMostAndLast(probing)
        let (sequence, token) = try XCTUnwrap(sent.first)
        let answered = core.handle(.probe(.reply(sequence: sequence, token: token, via: .icmp)), now: 9 * ms)
        assertOnePublishAtMostAndLast(answered)
        XCTAssertTrue(answered.contains(.verdictReady), "\(answered)")
        XCTAssertTrue(answered.contains { if case .reportChanged(_, let new) = $0 { new.answering == true } else { false } }, "\(answered)")
        XCTAssertEqual(answered.suffix(2), [.publish, .verdictReady], "Checks answer with the state just published")
        let state = core.state(previous: MonitorState())
        XCTAssertEqual(state.status, .ethernet)
        XCTAssertEqual(state.interface, "eth0")
        XCTAssertEqual(state.address, "198.18.0.2")
    }

    /// Every event, whatever it sets off inside, publishes at most once, as its last action.
    func testEveryEventPublishesAtMostOnceAndLast() {
        var core = makeCore()
        var now: UInt64 = 0
        var outstanding: [(UInt16, UInt64)] = []
        var events: [TargetCore.Event] = [
            .start(checkURL: "http://198.18.2.2/generate_204"),
            .resolved(generation: 0, .success([address]), routedFamilies: [IPAddress.familyIPv4]),
            .probing(.icmpDatagram), .route(route, routedFamilies: [IPAddress.familyIPv4]),
            .checkAnswered(generation: 1, .expected), .timeout, .timeout,
            .route(ReachabilityVerdict(usable: false, reason: "no route"), routedFamilies: []),
            .route(route, routedFamilies: [IPAddress.familyIPv4]), .targetChanged(host: "b.test", family: .ipv4),
            .resolved(generation: 1, .failure(HostResolver.Failure(message: "cannot resolve b.test: SERVFAIL")), routedFamilies: nil),
            .timeout, .probeSettings(ProbeSettings(intervalMilliseconds: 100, timeoutMilliseconds: 100)), .checkURL(""),
        ]
        while !events.isEmpty {
            let event = events.removeFirst()
            now += 150 * ms
            let actions = core.handle(event, now: now)
            assertOnePublishAtMostAndLast(actions)
            outstanding += sends(actions)
            if let (sequence, token) = outstanding.popLast(), case .timeout = event {
                assertOnePublishAtMostAndLast(core.handle(.probe(.reply(sequence: sequence, token: token, via: .tcp)), now: now + ms))
            }
            if actions.contains(where: { if case .probe = $0 { true } else { false } }) { events.insert(.probing(.icmpRaw), at: 0) }
        }
    }

    /// A Check with nothing to probe says so; with an address it probes once and a verdict follows.
    func testACheckProbesOnlyWithAnAddress() throws {
        var core = makeCore()
        _ = core.handle(.start(checkURL: ""), now: 0)
        XCTAssertFalse(core.check(now: ms).probing)
        _ = core.handle(.resolved(generation: 0, .success([address]), routedFamilies: [IPAddress.familyIPv4]), now: 2 * ms)
        let first = core.handle(.probing(.icmpDatagram), now: 3 * ms)
        let (sequence, token) = try XCTUnwrap(sends(first).first)
        _ = core.handle(.probe(.reply(sequence: sequence, token: token, via: .icmp)), now: 4 * ms)
        // The first probe was forced (a new target's): a Check within Timeout waits for the next slot.
        let soon = core.check(now: 5 * ms)
        XCTAssertTrue(soon.probing)
        XCTAssertTrue(sends(soon.actions).isEmpty, "\(soon.actions)")
        let later = core.handle(.timeout, now: try XCTUnwrap(core.nextWakeup))
        XCTAssertEqual(sends(later).count, 1, "\(later)")
    }
}
