import ProbeRules
import TestTime
import Timekeeping
import XCTest

/// The probe ladder in ProbeCore: a TCP connection beside the echo whenever the
/// previous probe got no ICMP answer; its answer counts, and says `tcp`.
final class ProbeLadderTests: XCTestCase {

    func sends(_ core: inout ProbeCore) -> [(sequence: UInt16, token: UInt64, alsoTCP: Bool)] {
        core.takeOutputs().compactMap {
            if case .send(let sequence, let token, _, _, let alsoTCP) = $0 { (sequence, token, alsoTCP) } else { nil }
        }
    }

    func testTCPGoesAlongUntilICMPAnswersAndAgainOnceItStops() throws {
        var core = ProbeCore(settings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000), seed: 1)
        core.start(target: ProbeTarget(name: "h", family: .v4), method: .icmpDatagram, now: 0)
        var probe = try XCTUnwrap(sends(&core).first)
        XCTAssertTrue(probe.alsoTCP, "the first probe for a target tries both")
        // ICMP filtered: the TCP connection answers.
        core.receiveReply(sequence: probe.sequence, token: probe.token, now: 20 * ms, via: .tcp)
        XCTAssertEqual(core.report.answering, true)
        XCTAssertEqual(core.report.answeredBy, .tcp)
        core.handleTimeout(now: 1000 * ms)
        probe = try XCTUnwrap(sends(&core).first)
        XCTAssertTrue(probe.alsoTCP, "still no ICMP answer: TCP again")
        core.receiveReply(sequence: probe.sequence, token: probe.token, now: 1010 * ms, via: .icmp)
        XCTAssertEqual(core.report.answeredBy, .icmp)
        core.handleTimeout(now: 2000 * ms)
        probe = try XCTUnwrap(sends(&core).first)
        XCTAssertFalse(probe.alsoTCP, "ICMP answers: the TCP attempts stop")
        // That probe is lost: the next one tries TCP again.
        core.handleTimeout(now: 3000 * ms)
        let next = sends(&core)
        XCTAssertEqual(next.last?.alsoTCP, true)
        // A new target starts over.
        core.start(target: ProbeTarget(name: "g", family: .v4), method: .icmpDatagram, now: 4000 * ms)
        XCTAssertNil(core.report.answeredBy)
        XCTAssertEqual(sends(&core).first?.alsoTCP, true)
    }

    func testWithoutICMPEveryProbeIsTCPAlone() throws {
        var core = ProbeCore(seed: 2)
        core.start(target: ProbeTarget(name: "h", family: .v6), method: .tcp, now: 0)
        let probe = try XCTUnwrap(sends(&core).first)
        XCTAssertFalse(probe.alsoTCP, "the probe is a TCP connection already")
        core.receiveReply(sequence: probe.sequence, token: probe.token, now: 1 * ms, via: .tcp)
        XCTAssertEqual(core.report.answeredBy, .tcp)
    }
}

extension ProbeLadderTests {
    /// Both answer the same probe, TCP first: the echo reply that follows says ICMP works.
    func testAnEchoReplyAfterTheTCPAnswerReturnsToICMP() throws {
        var core = ProbeCore(seed: 3)
        core.start(target: ProbeTarget(name: "h", family: .v4), method: .icmpRaw, now: 0)
        let probe = try XCTUnwrap(sends(&core).first)
        core.receiveReply(sequence: probe.sequence, token: probe.token, now: 1 * ms, via: .tcp)
        XCTAssertEqual(core.report.answeredBy, .tcp)
        core.receiveReply(sequence: probe.sequence, token: probe.token, now: 2 * ms, via: .icmp)
        XCTAssertEqual(core.report.answeredBy, .icmp)
        core.handleTimeout(now: 1000 * ms)
        XCTAssertEqual(sends(&core).first?.alsoTCP, false)
        XCTAssertEqual(core.statistics.answered, 1)
    }
}
