import ProbeRules
import TestTime
import Timekeeping
import XCTest

/// An on-path forger answering probes with Destination Unreachables that quote only the echo header
/// (no token): a real reply to the same probe wins, and the forger never makes the status flap.
final class ForgedErrorTests: XCTestCase {
    private struct Sent { let sequence: UInt16; let token: UInt64; let at: Instant }

    /// Interval 500, Timeout 1500, FailureThreshold 2, every reply 300 ms late, and every other probe
    /// (the suspicion's follow-ups included) answered at once by a forged error: the host answers throughout.
    func testAForgerAnsweringEveryOtherProbeNeverMakesTheHostSilent() {
        var core = ProbeCore(
            settings: ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 1500, failureThreshold: 2),
            seed: 7)
        var now: Instant = 0
        var replies: [(at: Instant, sent: Sent)] = []
        var sentCount = 0
        var everSilent = false
        func collect() {
            for output in core.takeOutputs() {
                guard case .send(let sequence, let token, _, _, _) = output else { continue }
                let sent = Sent(sequence: sequence, token: token, at: now)
                sentCount += 1
                if sentCount % 2 == 0 {
                    XCTAssertTrue(
                        core.receiveError(
                            sequence: sequence, token: nil, .unreachable(code: 1), from: "198.18.0.1",
                            now: now &+ .microseconds(100)))
                }
                replies.append((now &+ .milliseconds(300), sent))
            }
            if core.report.answering == false { everSilent = true }
        }
        core.start(target: ProbeTarget(name: "198.18.2.2", family: .v4), method: .icmpRaw, now: now)
        collect()
        while now < 30 * second {
            let nextReply = replies.map(\.at).min() ?? .distantFuture
            let next = min(core.nextWakeup ?? .distantFuture, nextReply)
            now = next
            if let index = replies.firstIndex(where: { $0.at == next }) {
                let reply = replies.remove(at: index)
                core.receiveReply(sequence: reply.sent.sequence, token: reply.sent.token, now: now)
            } else {
                core.handleTimeout(now: now)
            }
            collect()
        }
        XCTAssertFalse(everSilent, "a forged error made the host not answering: \(core.report.reason)")
        XCTAssertEqual(core.report.answering, true)
        XCTAssertGreaterThan(sentCount, 55)
        XCTAssertLessThan(sentCount, 65, "the forger made us send more than the schedule")
    }

    /// The same forged error with no reply behind it: one failed probe at the deadline, never more, never sooner.
    func testAnUnprovenErrorWithNoReplyIsOneFailureAtTheDeadline() throws {
        var core = ProbeCore(
            settings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 2),
            seed: 8)
        core.start(target: ProbeTarget(name: "h", family: .v4), method: .icmpRaw, now: 0)
        guard
            case .send(let first, let token, _, _, _)? = core.takeOutputs().first(where: {
                if case .send = $0 { true } else { false }
            })
        else { return XCTFail("no first probe") }
        core.receiveReply(sequence: first, token: token, now: 1 * ms)
        core.handleTimeout(now: 1000 * ms)
        let probe = try XCTUnwrap(
            core.takeOutputs().compactMap { if case .send(let s, _, _, _, _) = $0 { s } else { nil } }.first)
        XCTAssertTrue(
            core.receiveError(sequence: probe, token: nil, .unreachable(code: 0), from: "198.18.0.1", now: 1001 * ms))
        XCTAssertTrue(core.isOutstanding(probe), "an unverifiable error does not end the probe")
        XCTAssertEqual(core.verdict.consecutiveFailures, 0)
        XCTAssertFalse(
            core.takeOutputs().contains { if case .send = $0 { true } else { false } }, "nothing sent for it")
        core.handleTimeout(now: 2000 * ms)
        XCTAssertEqual(core.verdict.consecutiveFailures, 1, "no reply by the deadline: one failure")
        XCTAssertEqual(core.report.answering, true)
        XCTAssertFalse(
            core.receiveError(sequence: probe, token: nil, .unreachable(code: 0), from: "198.18.0.1", now: 2001 * ms),
            "a second error about a finished probe is foreign")
    }
}
