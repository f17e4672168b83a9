import EventLoop
import NetAddress
import Probe
import ProbeRules
import Synchronization
import Timekeeping
import XCTest

/// Issue 45 N26: eight healthy targets behind one gateway sent 20 ARP requests in 65 s. One check serves every
/// target behind the same (interface, gateway): at most one a minute on a healthy network.
final class NeighborChecksTests: XCTestCase {
    final class FakeCheck {
        let completion: (NeighborAnswer) -> Void
        init(_ completion: @escaping (NeighborAnswer) -> Void) { self.completion = completion }
    }

    final class Clock: Sendable { let nanoseconds = Atomic<UInt64>(1_000_000_000) }
    let clock = Clock()
    var loop: MainLoop!
    var checks: NeighborChecks!
    var underway: [FakeCheck] = []
    let gateway = IPAddress.v4([198, 18, 0, 1])

    override func setUpWithError() throws {
        let clock = self.clock
        loop = try MainLoop(clock: { Instant(nanoseconds: clock.nanoseconds.load(ordering: .relaxed)) })
        checks = NeighborChecks(loop: loop) { [unowned self] _, _, _, completion in
            let check = FakeCheck(completion)
            underway.append(check)
            return check
        }
    }

    func advance(_ duration: Duration) {
        clock.nanoseconds.add(duration.nanoseconds, ordering: .relaxed)
        loop.runDueWork()
    }

    /// Every running check answers `answer`.
    func answerAll(_ answer: NeighborAnswer) {
        let running = underway
        underway = []
        for check in running { check.completion(answer) }
    }

    func testEightHealthyTargetsShareOneCheckAMinute() {
        var answers: [Int: [NeighborAnswer]] = [:]
        var tickets: [NeighborChecks.Ticket] = []
        // Each target's first check comes with its route (not routine); then its healthy recheck every 60 s,
        // each target at its own phase, over 10 minutes.
        for target in 0..<8 {
            tickets.append(
                checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: false) {
                    answers[target, default: []].append($0)
                })
            advance(.milliseconds(10))
            answerAll(.reachable)
        }
        XCTAssertEqual(checks.started, 8, "a new route asks afresh")
        let before = checks.started
        for second in 0..<600 {
            for target in 0..<8 where (second + target * 7) % 60 == 0 {
                tickets.append(
                    checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: true) {
                        answers[target, default: []].append($0)
                    })
            }
            advance(.milliseconds(600))
            answerAll(.reachable)
            advance(.milliseconds(400))
        }
        let sent = checks.started - before
        XCTAssertLessThanOrEqual(sent, 11, "\(sent) checks in 10 minutes for one gateway")
        XCTAssertGreaterThanOrEqual(sent, 5, "the gateway is still asked")
        for target in 0..<8 { XCTAssertEqual(answers[target]?.count, 1 + 10, "target \(target) heard every answer") }
    }

    func testAChecksJoinsTheOneRunningAndASuspicionNeverTakesAnOldAnswer() {
        var heard: [String] = []
        _ = checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: false) { heard.append("a \($0)") }
        _ = checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: true) { heard.append("b \($0)") }
        let other = checks.check(gateway: .v4([198, 18, 0, 254]), interfaceIndex: 2, source: nil, routine: true) {
            heard.append("c \($0)")
        }
        XCTAssertEqual(checks.started, 2, "one per next hop")
        other.cancel()
        answerAll(.reachable)
        XCTAssertEqual(heard, ["a reachable", "b reachable"], "the cancelled ticket hears nothing")
        // A suspicion 5 s later asks afresh; a routine recheck takes the answer, answered after this turn.
        advance(.seconds(5))
        _ = checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: false) { heard.append("d \($0)") }
        XCTAssertEqual(checks.started, 3)
        answerAll(.unreachable)
        _ = checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: true) { heard.append("e \($0)") }
        XCTAssertEqual(checks.started, 4, "an unreachable answer is never reused")
        answerAll(.reachable)
        let reused = checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: true) {
            heard.append("f \($0)")
        }
        XCTAssertEqual(checks.started, 4)
        XCTAssertFalse(heard.contains { $0.hasPrefix("f") }, "never from inside the call")
        loop.runDueWork()
        XCTAssertEqual(heard.last, "f reachable")
        _ = reused
        // After a minute the answer is old: a routine recheck sends again.
        advance(.seconds(61))
        _ = checks.check(gateway: gateway, interfaceIndex: 2, source: nil, routine: true) { heard.append("g \($0)") }
        XCTAssertEqual(checks.started, 5)
    }
}
