import ProbeRules
import TestTime
import Timekeeping
import XCTest

/// Traffic as evidence without sockets: the word a sample gives, when to sample, and what the
/// probe core does with the word (a stall is a suspicion; flowing traffic may stand in for a probe).
final class TrafficEvidenceTests: XCTestCase {

    func testTheWordASampleGives() {
        XCTAssertEqual(TrafficSample().traffic, .idle)
        XCTAssertEqual(
            TrafficSample(connections: 5, receivingRemotes: 1, retransmittingRemotes: 4).traffic, .flowing,
            "data in from one remote routed like Host: not stalled, whatever else retransmits")
        XCTAssertEqual(TrafficSample(connections: 5, receivingRemotes: 0, retransmittingRemotes: 2).traffic, .stalled)
        XCTAssertEqual(
            TrafficSample(connections: 5, receivingRemotes: 0, retransmittingRemotes: 1).traffic, .idle,
            "one dead remote is no stall")
    }

    func testWhenToSample() throws {
        var watch = TrafficWatch()
        XCTAssertEqual(watch.traffic, .none)
        XCTAssertNil(watch.takeDueSample(now: 0), "no route, nothing to sample")
        XCTAssertTrue(watch.pathChanged(watching: true, now: 0))
        XCTAssertEqual(watch.traffic, .idle, "before the first sample")
        var due = try XCTUnwrap(watch.takeDueSample(now: 0))
        XCTAssertFalse(due.inline, "the first sample's cost is unknown: off the loop")
        XCTAssertNil(watch.takeDueSample(now: 0), "one at a time")
        // Connections exist: every 500 ms; a cheap sample runs on the loop next time.
        XCTAssertTrue(
            watch.sampled(
                generation: due.generation, TrafficSample(connections: 3, receivingRemotes: 2),
                cost: 50_000, nextProbe: 700 * ms, now: 10 * ms))
        XCTAssertEqual(watch.traffic, .flowing)
        XCTAssertEqual(watch.nextSampleAt, 510 * ms)
        due = try XCTUnwrap(watch.takeDueSample(now: 510 * ms))
        XCTAssertTrue(due.inline)
        // None: every 5 s, or at the next probe when sooner (a wake-up the schedule has anyway).
        XCTAssertTrue(
            watch.sampled(
                generation: due.generation, TrafficSample(), cost: 50_000, nextProbe: 1510 * ms, now: 510 * ms))
        XCTAssertEqual(watch.nextSampleAt, 1510 * ms)
        due = try XCTUnwrap(watch.takeDueSample(now: 1510 * ms))
        _ = watch.sampled(
            generation: due.generation, TrafficSample(), cost: 50_000, nextProbe: 31_510 * ms, now: 1510 * ms)
        XCTAssertEqual(watch.nextSampleAt, 6510 * ms)
        // A probe sooner than a busy sample would be (Interval 100 ms) is no reason to sample more often.
        due = try XCTUnwrap(watch.takeDueSample(now: 6510 * ms))
        _ = watch.sampled(
            generation: due.generation, TrafficSample(), cost: 50_000, nextProbe: 6610 * ms, now: 6510 * ms)
        XCTAssertEqual(watch.nextSampleAt, 11_510 * ms)
        // A dear sample (20 ms of CPU): at most 0.8 % of a core, so 2.5 s to the next; off the loop.
        due = try XCTUnwrap(watch.takeDueSample(now: 11_510 * ms))
        _ = watch.sampled(
            generation: due.generation, TrafficSample(connections: 10_000), cost: 20 * ms, nextProbe: nil,
            now: 11_510 * ms)
        XCTAssertEqual(watch.nextSampleAt, 14_010 * ms)
        due = try XCTUnwrap(watch.takeDueSample(now: 14_010 * ms))
        XCTAssertFalse(due.inline)
        // A new path: samples for the old one are dropped; no route: nothing.
        XCTAssertFalse(watch.pathChanged(watching: true, now: 14_500 * ms))
        XCTAssertFalse(
            watch.sampled(
                generation: due.generation, TrafficSample(connections: 1, retransmittingRemotes: 3),
                cost: 0, nextProbe: nil, now: 14_501 * ms))
        XCTAssertEqual(watch.traffic, .idle)
        XCTAssertTrue(watch.pathChanged(watching: false, now: 14_502 * ms))
        XCTAssertEqual(watch.traffic, .none)
        XCTAssertNil(watch.nextWakeup)
    }

    func testFlowingLastsOneSecondWithoutANewerSample() throws {
        var watch = TrafficWatch()
        _ = watch.pathChanged(watching: true, now: 0)
        let due = try XCTUnwrap(watch.takeDueSample(now: 0))
        // A dear sample: the next is 3.75 s away, but the evidence is only good for a second.
        _ = watch.sampled(
            generation: due.generation, TrafficSample(connections: 9, receivingRemotes: 1), cost: 30 * ms,
            nextProbe: nil, now: 0)
        XCTAssertEqual(watch.nextWakeup, 1000 * ms)
        XCTAssertFalse(watch.expire(now: 999 * ms))
        XCTAssertTrue(watch.expire(now: 1000 * ms))
        XCTAssertEqual(watch.traffic, .idle)
        XCTAssertEqual(watch.nextWakeup, 3750 * ms)
    }

    // MARK: The probe core

    private func sends(_ core: inout ProbeCore) -> [(sequence: UInt16, token: UInt64, forCheck: Bool)] {
        core.takeOutputs().compactMap {
            if case .send(let sequence, let token, let forCheck, _, _) = $0 { (sequence, token, forCheck) } else { nil }
        }
    }

    /// A core whose host answers, at 1 s; the schedule's next probe is due at 1000 ms.
    private func answeringCore(_ settings: ProbeSettings) throws -> ProbeCore {
        var core = ProbeCore(settings: settings, seed: 7)
        core.start(target: ProbeTarget(name: "h", family: .v4), method: .icmpDatagram, now: 0)
        let first = try XCTUnwrap(sends(&core).first)
        core.receiveReply(sequence: first.sequence, token: first.token, now: 10 * ms)
        XCTAssertEqual(core.report.answering, true)
        _ = core.takeOutputs()
        return core
    }

    func testAStallIsASuspicionWithinTheForcedProbeLimit() throws {
        var core = try answeringCore(ProbeSettings(intervalMilliseconds: 30_000, timeoutMilliseconds: 1000))
        core.trafficChanged(.flowing, now: 100 * ms)
        XCTAssertTrue(sends(&core).isEmpty)
        core.trafficChanged(.stalled, now: 2000 * ms)
        let forced = try XCTUnwrap(sends(&core).first, "a stall probes at once")
        XCTAssertTrue(forced.forCheck)
        XCTAssertEqual(core.report.answering, true, "a stall alone changes nothing")
        core.receiveReply(sequence: forced.sequence, token: forced.token, now: 2010 * ms)
        // Stalls again within the Timeout: the next forced probe waits for it.
        core.trafficChanged(.idle, now: 2100 * ms)
        core.trafficChanged(.stalled, now: 2200 * ms)
        XCTAssertTrue(sends(&core).isEmpty)
        core.handleTimeout(now: 3000 * ms)
        XCTAssertEqual(sends(&core).count, 1, "one Timeout after the last forced probe")
        XCTAssertEqual(core.statistics.suspicions, 1)
    }

    func testAStallForAHostNotAnsweringChangesNothing() throws {
        var core = ProbeCore(settings: ProbeSettings(intervalMilliseconds: 30_000, timeoutMilliseconds: 1000), seed: 8)
        core.start(target: ProbeTarget(name: "h", family: .v4), method: .icmpDatagram, now: 0)
        _ = core.takeOutputs()
        core.handleTimeout(now: 1000 * ms)
        _ = core.takeOutputs()
        core.trafficChanged(.stalled, now: 1500 * ms)
        XCTAssertTrue(sends(&core).isEmpty, "the first verdict is not in: the schedule decides")
    }

    func testFlowingTrafficStandsInForScheduledProbesWithEvidenceTraffic() throws {
        var core = try answeringCore(
            ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, evidence: .traffic))
        core.trafficChanged(.flowing, now: 500 * ms)
        for second in 1...5 {
            core.handleTimeout(now: UInt64(second) * 1000 * ms)
            XCTAssertTrue(sends(&core).isEmpty, "skipped at \(second) s")
        }
        XCTAssertEqual(core.report.probesSkipped, 5)
        XCTAssertEqual(core.report.answeredBy, .traffic)
        XCTAssertEqual(core.report.probesSent, 1)
        // Traffic stops: the skipped probe goes out at once, and ICMP answers it.
        core.trafficChanged(.idle, now: 5300 * ms)
        let resumed = try XCTUnwrap(sends(&core).first)
        XCTAssertFalse(resumed.forCheck)
        core.receiveReply(sequence: resumed.sequence, token: resumed.token, now: 5310 * ms)
        XCTAssertEqual(core.report.answeredBy, .icmp)
        // A whole Interval on from the resumed probe, moving toward the Interval's grid by at most a sixteenth of it.
        let next = try XCTUnwrap(core.nextScheduledProbe)
        XCTAssertGreaterThanOrEqual(next, 6300 * ms, "the schedule goes on from the resumed probe")
        XCTAssertLessThanOrEqual(next, 6300 * ms + 1000 * ms / 16, "the schedule goes on from the resumed probe")
    }

    func testEvidenceProbesNeverSkips() throws {
        var core = try answeringCore(ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000))
        core.trafficChanged(.flowing, now: 500 * ms)
        core.handleTimeout(now: 1000 * ms)
        XCTAssertEqual(sends(&core).count, 1)
        XCTAssertEqual(core.report.probesSkipped, 0)
    }

    func testTrafficNeverBringsBackAHostThatIsNotAnswering() throws {
        var core = try answeringCore(
            ProbeSettings(
                intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 1,
                evidence: .traffic))
        core.handleTimeout(now: 1000 * ms)
        _ = sends(&core)
        core.handleTimeout(now: 2000 * ms) // lost: not answering (threshold 1), and the next probe goes out
        XCTAssertEqual(core.report.answering, false)
        _ = sends(&core)
        core.trafficChanged(.flowing, now: 2100 * ms)
        core.handleTimeout(now: 3000 * ms)
        XCTAssertFalse(sends(&core).isEmpty, "recovery only by answered probes")
        XCTAssertEqual(core.report.probesSkipped, 0)
        XCTAssertEqual(core.report.answering, false)
    }
}
