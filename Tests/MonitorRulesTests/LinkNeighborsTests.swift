import MonitorRules
import NetAddress
import ProbeRules
import Timekeeping
import XCTest

/// Issue 45 N26: eight healthy targets behind one gateway sent 20 ARP requests in 65 s. One check serves every
/// path behind the same (link, gateway): at most one a minute on a healthy network; a suspicion never takes an old
/// answer; a check nobody waits for is cancelled.
final class LinkNeighborsTests: XCTestCase {
    typealias PathKey = ServiceCore.PathKey
    let gateway = IPAddress.v4([198, 18, 0, 1])
    var neighbors = LinkNeighbors()
    var now = Instant.origin
    /// Every answer each path heard, by target.
    var heard: [Int: [NeighborAnswer]] = [:]
    /// The checks on the wire: gateway and number.
    var underway: [(gateway: IPAddress, number: UInt64)] = []

    func path(_ target: Int, _ family: IPFamily = .v4) -> PathKey { PathKey(target: target, family: family) }

    func carryOut(_ actions: [LinkNeighbors.Action]) {
        for action in actions {
            switch action {
            case .check(let gateway, _, let number): underway.append((gateway, number))
            case .cancel(let gateway, let number): underway.removeAll { $0 == (gateway, number) }
            case .answer(let path, _, let answer, _): heard[path.target, default: []].append(answer)
            }
        }
    }

    func ask(_ target: Int, gateway: IPAddress? = nil, routine: Bool) {
        carryOut(
            neighbors.ask(
                path(target), gateway: gateway ?? self.gateway, source: "198.18.0.2", generation: 1, routine: routine,
                now: now))
    }

    /// Every check on the wire answers `answer`.
    func answerAll(_ answer: NeighborAnswer) {
        let running = underway
        underway = []
        for check in running { carryOut(neighbors.answered(gateway: check.gateway, number: check.number, answer)) }
    }

    func testEightHealthyTargetsShareOneCheckAMinute() {
        // Each target's first check comes with its route (not routine); then its healthy recheck every 60 s,
        // each target at its own phase, over 10 minutes.
        for target in 0..<8 {
            ask(target, routine: false)
            now = now + .milliseconds(10)
            answerAll(.reachable)
        }
        XCTAssertEqual(neighbors.started, 8, "a new route asks afresh")
        let before = neighbors.started
        for second in 0..<600 {
            for target in 0..<8 where (second + target * 7) % 60 == 0 { ask(target, routine: true) }
            now = now + .milliseconds(600)
            answerAll(.reachable)
            now = now + .milliseconds(400)
        }
        let sent = neighbors.started - before
        XCTAssertLessThanOrEqual(sent, 11, "\(sent) checks in 10 minutes for one gateway")
        XCTAssertGreaterThanOrEqual(sent, 5, "the gateway is still asked")
        for target in 0..<8 { XCTAssertEqual(heard[target]?.count, 1 + 10, "target \(target) heard every answer") }
    }

    func testAnAskJoinsTheOneRunningAndASuspicionNeverTakesAnOldAnswer() {
        ask(0, routine: false)
        ask(1, routine: true)
        ask(2, gateway: .v4([198, 18, 0, 254]), routine: true)
        XCTAssertEqual(neighbors.started, 2, "one per next hop")
        // Target 2 asks target 0's gateway instead: its own check, which nobody else waits for, is cancelled.
        ask(2, routine: true)
        XCTAssertEqual(underway.map(\.gateway), [gateway], "the other next hop's check went")
        answerAll(.reachable)
        XCTAssertEqual(heard, [0: [.reachable], 1: [.reachable], 2: [.reachable]])
        // A suspicion 5 s later asks afresh; a routine recheck takes the answer without sending.
        now = now + .seconds(5)
        ask(3, routine: false)
        XCTAssertEqual(neighbors.started, 3)
        answerAll(.unreachable)
        ask(4, routine: true)
        XCTAssertEqual(neighbors.started, 4, "an unreachable answer is never reused")
        answerAll(.reachable)
        ask(5, routine: true)
        XCTAssertEqual(neighbors.started, 4, "a reachable answer within a minute serves a routine recheck")
        XCTAssertEqual(heard[5], [.reachable])
        // After a minute the answer is old: a routine recheck sends again.
        now = now + .seconds(61)
        ask(6, routine: true)
        XCTAssertEqual(neighbors.started, 5)
    }

    func testTheAnswerSaysWhenItsCheckWentOut() {
        ask(0, routine: false)
        let asked = now
        now = now + .milliseconds(300)
        let joined = neighbors.ask(path(1), gateway: gateway, source: "", generation: 7, routine: false, now: now)
        XCTAssertEqual(joined, [], "it joins the check under way")
        now = now + .milliseconds(300)
        let answers = neighbors.answered(gateway: gateway, number: 1, .unreachable)
        XCTAssertEqual(
            answers,
            [
                .answer(path(0), generation: 1, .unreachable, checkedAt: asked),
                .answer(path(1), generation: 7, .unreachable, checkedAt: asked),
            ])
        XCTAssertEqual(neighbors.answered(gateway: gateway, number: 1, .reachable), [], "answered once")
    }

    func testAGoneTargetOrLinkCancelsWhatNobodyElseWaitsFor() {
        ask(0, routine: false)
        carryOut(
            neighbors.ask(
                path(0, .v6), gateway: .v4([198, 18, 0, 9]), source: "", generation: 1, routine: false, now: now))
        ask(1, routine: false)
        carryOut(neighbors.withdraw(target: 0))
        XCTAssertEqual(underway.map(\.gateway), [gateway], "target 1 still waits for the first gateway")
        carryOut(neighbors.end())
        XCTAssertTrue(underway.isEmpty)
        XCTAssertTrue(neighbors.isIdle)
        XCTAssertTrue(heard.isEmpty)
    }
}
