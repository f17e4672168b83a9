import ProbeRules
import TestTime
import Timekeeping
import XCTest

final class ProbeTrackerTests: XCTestCase {
    func testRoundTripComesFromOurClock() {
        var tracker = ProbeTracker(firstSequence: 10)
        let sequence = tracker.send(token: 42, now: 1_000, timeout: 500)
        XCTAssertEqual(sequence, 10)
        XCTAssertEqual(tracker.reply(sequence: 10, token: 42, now: 1_300), .answered(sequence: 10, roundTrip: 300))
        XCTAssertEqual(tracker.reply(sequence: 10, token: 42, now: 1_400), .duplicate)
        XCTAssertEqual(tracker.reply(sequence: 10, token: 43, now: 1_400), .foreign)
        XCTAssertEqual(tracker.reply(sequence: 11, token: 42, now: 1_400), .foreign, "never sent")
    }

    func testWrongTokenDoesNotConsumeTheProbe() {
        var tracker = ProbeTracker(firstSequence: 1)
        _ = tracker.send(token: 7, now: 0, timeout: 100)
        XCTAssertEqual(tracker.reply(sequence: 1, token: 8, now: 10), .foreign)
        XCTAssertEqual(tracker.reply(sequence: 1, token: 7, now: 20), .answered(sequence: 1, roundTrip: 20))
    }

    func testTimeoutsThenLateReplies() {
        var tracker = ProbeTracker(firstSequence: 0)
        _ = tracker.send(token: 1, now: 0, timeout: 100)
        _ = tracker.send(token: 2, now: 50, timeout: 100)
        XCTAssertEqual(tracker.nextDeadline, 100)
        XCTAssertEqual(tracker.expire(now: 120).map(\.sequence), [0])
        XCTAssertEqual(tracker.reply(sequence: 0, token: 1, now: 130), .late(sequence: 0))
        XCTAssertEqual(
            tracker.reply(sequence: 1, token: 2, now: 140), .answered(sequence: 1, roundTrip: 90),
            "overlapping probes finish independently")
        XCTAssertNil(tracker.nextDeadline)
    }

    func testSequenceWrapsWithProbesInFlight() {
        var tracker = ProbeTracker(firstSequence: 65534)
        let sequences = (0..<4).map { tracker.send(token: UInt64($0), now: UInt64($0) * ns, timeout: 1000) }
        XCTAssertEqual(sequences, [65534, 65535, 0, 1])
        XCTAssertEqual(tracker.reply(sequence: 0, token: 2, now: 10), .answered(sequence: 0, roundTrip: 8))
        XCTAssertEqual(tracker.reply(sequence: 65535, token: 1, now: 10), .answered(sequence: 65535, roundTrip: 9))
    }

    func testErrorsMatchOnlyOutstandingProbes() {
        var tracker = ProbeTracker(firstSequence: 5)
        _ = tracker.send(token: 99, now: 0, timeout: 100)
        XCTAssertNil(tracker.error(sequence: 5, token: 98), "quoted token not ours")
        XCTAssertNil(tracker.error(sequence: 6, token: nil))
        XCTAssertEqual(tracker.error(sequence: 5, token: nil)?.sequence, 5, "a short quote still names our sequence")
        XCTAssertNil(tracker.error(sequence: 5, token: 99), "already finished")
    }

    func testMemoryStaysBounded() {
        var tracker = ProbeTracker(firstSequence: 0)
        for i in 0..<10_000 {
            let sequence = tracker.send(token: UInt64(i), now: UInt64(i) * ns, timeout: 1)
            if i % 2 == 0 { _ = tracker.reply(sequence: sequence, token: UInt64(i), now: UInt64(i) * ns) }
            _ = tracker.expire(now: UInt64(i + 1) * ns)
        }
        XCTAssertTrue(tracker.outstanding.isEmpty)
        XCTAssertEqual(tracker.reply(sequence: 9_999, token: 9_999, now: 20_000), .late(sequence: 9_999))
        XCTAssertEqual(tracker.reply(sequence: 1, token: 1, now: 20_000), .foreign, "forgotten long ago")
    }
}
