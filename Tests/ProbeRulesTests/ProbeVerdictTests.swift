import ProbeRules
import TestTime
import Timekeeping
import XCTest

final class ProbeVerdictTests: XCTestCase {
    func verdict(_ failures: UInt32 = 2, _ recoveries: UInt32 = 1) -> ProbeVerdict {
        ProbeVerdict(failureThreshold: failures, recoveryThreshold: recoveries)
    }

    func testTheSeedScenarioOneLostPingIsNotAnOutage() {
        var v = verdict(2, 1)
        XCTAssertTrue(v.record(.answered(roundTrip: .microseconds(800)), timeoutMilliseconds: 1000))
        XCTAssertEqual(v.answering, true)
        XCTAssertFalse(v.record(.lost, timeoutMilliseconds: 1000), "one lost ping at threshold 2")
        XCTAssertEqual(v.answering, true)
        XCTAssertTrue(v.wantsImmediateProbe, "suspicion: the next probe goes at once")
        XCTAssertFalse(v.record(.answered(roundTrip: .microseconds(900)), timeoutMilliseconds: 1000))
        XCTAssertFalse(v.wantsImmediateProbe)
        XCTAssertFalse(v.record(.lost, timeoutMilliseconds: 1000))
        XCTAssertTrue(v.record(.lost, timeoutMilliseconds: 1000), "the second in a row is an outage")
        XCTAssertEqual(v.answering, false)
        XCTAssertEqual(v.reason, "host not answering: 2 probes lost")
        XCTAssertFalse(v.wantsImmediateProbe, "not answering: back to the interval")
        XCTAssertEqual(v.roundTripMicroseconds, 900, "the last successful round trip is kept")
        XCTAssertTrue(v.record(.answered(roundTrip: .microseconds(700)), timeoutMilliseconds: 1000))
        XCTAssertEqual(v.reason, "")
    }

    func testRecoveryThresholdAndBackToBackAfterARouteReturns() {
        var v = verdict(1, 3)
        v.record(.lost, timeoutMilliseconds: 1000)
        XCTAssertEqual(v.answering, false, "threshold 1")
        v.recoveringBackToBack = true
        XCTAssertFalse(v.record(.answered(roundTrip: .microseconds(1)), timeoutMilliseconds: 1000))
        XCTAssertTrue(v.wantsImmediateProbe)
        XCTAssertFalse(v.record(.answered(roundTrip: .microseconds(1)), timeoutMilliseconds: 1000))
        XCTAssertTrue(
            v.record(.answered(roundTrip: .microseconds(1)), timeoutMilliseconds: 1000), "the third answer recovers")
        XCTAssertFalse(v.recoveringBackToBack)
        XCTAssertFalse(v.wantsImmediateProbe)
    }

    func testFirstVerdictNeedsOneAnswerAndFailuresBeforeItCount() {
        var v = verdict(2, 5)
        XCTAssertNil(v.answering)
        v.record(.lost, timeoutMilliseconds: 1000)
        XCTAssertNil(v.answering)
        v.record(.lost, timeoutMilliseconds: 1000)
        XCTAssertEqual(v.answering, false)
        var fresh = verdict(2, 5)
        fresh.record(.answered(roundTrip: .microseconds(5)), timeoutMilliseconds: 1000)
        XCTAssertEqual(fresh.answering, true, "RecoveryThreshold does not apply to the first verdict")
    }

    func testRefusalIsImmediateAndTimeExceededCountsOnce() {
        var v = verdict(3, 1)
        v.record(.answered(roundTrip: .microseconds(5)), timeoutMilliseconds: 1000)
        XCTAssertTrue(v.record(.refused(reason: "destination unreachable from 198.18.0.1"), timeoutMilliseconds: 1000))
        XCTAssertEqual(v.reason, "destination unreachable from 198.18.0.1")
        var w = verdict(2, 1)
        w.record(.answered(roundTrip: .microseconds(5)), timeoutMilliseconds: 1000)
        XCTAssertFalse(w.record(.timeExceeded(from: "198.18.0.1"), timeoutMilliseconds: 1000))
        XCTAssertTrue(w.record(.timeExceeded(from: "198.18.0.1"), timeoutMilliseconds: 1000))
        XCTAssertEqual(w.reason, "host not answering: time exceeded at 198.18.0.1 (2 probes lost)")
    }

    func testTooSlowIsToldApartFromSilence() {
        var v = verdict(2, 1)
        v.record(.lost, timeoutMilliseconds: 200)
        v.record(.lost, timeoutMilliseconds: 200)
        v.noteLateReply(timeoutMilliseconds: 200)
        XCTAssertEqual(v.reason, "host too slow: no reply within 200 ms (2 probes)")
        v.record(.lost, timeoutMilliseconds: 200)
        XCTAssertEqual(v.reason, "host too slow: no reply within 200 ms (3 probes)")
    }

    func testPacketLossOverTheLastTwenty() {
        var v = verdict(100, 1)
        for i in 0..<40 {
            v.record(i % 4 == 0 ? .lost : .answered(roundTrip: .microseconds(1)), timeoutMilliseconds: 1000)
        }
        XCTAssertEqual(v.packetLoss, 0.25, accuracy: 1e-9)
        for _ in 0..<20 { v.record(.answered(roundTrip: .microseconds(1)), timeoutMilliseconds: 1000) }
        XCTAssertEqual(v.packetLoss, 0)
        v.reset()
        XCTAssertNil(v.answering)
        XCTAssertEqual(v.roundTripMicroseconds, 0)
    }

    func testFlapsUnderRandomLossAreBoundedByTheThresholds() {
        // 30 % loss, fixed pseudo-random sequence: higher thresholds must flap less.
        func flaps(_ failures: UInt32, _ recoveries: UInt32) -> Int {
            var v = verdict(failures, recoveries)
            var state: UInt64 = 12345
            var changes = 0
            for _ in 0..<2000 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let lost = (state >> 33) % 100 < 30
                if v.record(lost ? .lost : .answered(roundTrip: .microseconds(1)), timeoutMilliseconds: 1000) {
                    changes += 1
                }
            }
            return changes
        }
        let low = flaps(2, 1)
        let high = flaps(3, 2)
        XCTAssertGreaterThan(low, high)
        XCTAssertLessThan(high, 2000 / 20)
    }

    func testOnlySilenceIsReprobedAtOnceAndAnUnprovenErrorIsOneFailure() {
        // An unproven error's failure is recorded only at the probe's deadline, with no reply: silence.
        var v = ProbeVerdict(failureThreshold: 3, recoveryThreshold: 1)
        v.record(.answered(roundTrip: .microseconds(100)), timeoutMilliseconds: 1000)
        v.record(.timeExceeded(from: "198.18.0.1"), timeoutMilliseconds: 1000)
        XCTAssertFalse(v.wantsImmediateProbe, "the network answered: the next probe waits for its tick")
        v.record(.lost, timeoutMilliseconds: 1000)
        XCTAssertTrue(v.wantsImmediateProbe, "silence: confirm it at once")
        XCTAssertEqual(v.answering, true)

        var u = ProbeVerdict(failureThreshold: 3, recoveryThreshold: 1)
        u.record(.answered(roundTrip: .microseconds(100)), timeoutMilliseconds: 1000)
        for failure in 1...2 {
            XCTAssertFalse(
                u.record(.unproven(from: "198.18.2.2"), timeoutMilliseconds: 1000),
                "failure \(failure) is not an outage")
            XCTAssertTrue(u.wantsImmediateProbe, "no reply came: confirm at once, as silence")
        }
        XCTAssertTrue(u.record(.unproven(from: "198.18.2.2"), timeoutMilliseconds: 1000))
        XCTAssertEqual(
            u.reason,
            "host not answering: 3 probes failed (ICMP errors from 198.18.2.2 that quote too little to be verified)")
    }
}
