import Timekeeping
import XCTest

final class TimekeepingTests: XCTestCase {
    func testUnitsMeetInNanoseconds() {
        XCTAssertEqual(Duration.seconds(2), .milliseconds(2_000))
        XCTAssertEqual(Duration.milliseconds(3), .microseconds(3_000))
        XCTAssertEqual(Duration.microseconds(4), .nanoseconds(4_000))
        XCTAssertEqual(Duration.milliseconds(1_999).seconds, 1, "whole units are rounded down")
        XCTAssertEqual(Duration.nanoseconds(2_500_000).milliseconds, 2)
        XCTAssertEqual(Duration.seconds(1) / Duration.milliseconds(300), 3)
        XCTAssertEqual(Duration.seconds(1) % Duration.milliseconds(300), .milliseconds(100))
        XCTAssertEqual(Duration.milliseconds(5) * 3, .milliseconds(15))
        XCTAssertEqual(Duration.seconds(3) / 4, .milliseconds(750))
    }

    func testInstantsAreMovedOnlyByDurations() {
        let start = Instant.origin + .seconds(5)
        let later = start + .milliseconds(250)
        XCTAssertEqual(later - start, .milliseconds(250))
        XCTAssertEqual(later.duration(since: start), .milliseconds(250))
        XCTAssertEqual(start.duration(since: later), .zero, "a later instant is no time ago")
        XCTAssertLessThan(start, later)
        XCTAssertLessThan(later, .distantFuture)
        XCTAssertEqual(later - .milliseconds(250), start)
        XCTAssertEqual(Instant.distantFuture &+ .nanoseconds(1), .origin, "&+ wraps where asked to")
    }

    /// The history's clocks: lengths on the boot clock never negative, wall times in microseconds at the edges,
    /// and a number of microseconds from outside refused where it is more than a Duration holds.
    func testBootAndWallReadingsAreTheirOwnTypes() {
        let boot = BootTime(sinceBoot: .seconds(10))
        XCTAssertEqual((boot + .seconds(5)).duration(since: boot), .seconds(5))
        XCTAssertEqual(boot.duration(since: boot + .seconds(5)), .zero, "a later reading: no time, not a trap")
        let wall = WallTime(microseconds: 1_800_000_000_000_000)
        XCTAssertEqual(wall.microseconds, 1_800_000_000_000_000)
        XCTAssertEqual((wall + .microseconds(1_500)).microseconds, 1_800_000_000_001_500)
        XCTAssertEqual(wall.earlier(by: .seconds(1)).microseconds, 1_799_999_999_000_000)
        XCTAssertEqual(
            WallTime(microseconds: 5).earlier(by: .seconds(1)), WallTime(sinceEpoch: .zero), "never before the epoch")
        XCTAssertEqual(
            Duration.microseconds(exactly: 18_446_744_073_709_551), Duration(nanoseconds: 18_446_744_073_709_551_000))
        XCTAssertNil(Duration.microseconds(exactly: 18_446_744_073_709_552))
        XCTAssertNil(Duration.microseconds(exactly: .max))
    }

    func testDescriptionsAreForPeople() {
        XCTAssertEqual(Duration.seconds(2).description, "2 s")
        XCTAssertEqual(Duration.milliseconds(1_500).description, "1.5 s")
        XCTAssertEqual(Duration.milliseconds(250).description, "250 ms")
        XCTAssertEqual(Duration.microseconds(1_020).description, "1.02 ms")
        XCTAssertEqual(Duration.microseconds(40).description, "40 µs")
        XCTAssertEqual(Duration.nanoseconds(7).description, "7 ns")
        XCTAssertEqual((Instant.origin + .seconds(3)).description, "3 s from origin")
    }

    /// A table of three timers, two armed at the same moment.
    struct Alarms: TimerTable {
        enum Timer: CaseIterable { case first, second, third }
        var deadlines: [Timer: Instant] = [:]
        func deadline(_ timer: Timer) -> Instant? { deadlines[timer] }
    }

    func testATableWakesAtItsEarliestDeadlineAndRunsTiesInOrder() {
        var alarms = Alarms()
        XCTAssertNil(alarms.earliestDeadline, "nothing armed: no wake-up")
        XCTAssertNil(alarms.firstDue(now: .distantFuture))
        let t = Instant.origin + .seconds(10)
        alarms.deadlines = [.third: t, .second: t, .first: t + .seconds(1)]
        XCTAssertEqual(alarms.earliestDeadline, t)
        XCTAssertNil(alarms.firstDue(now: t - .nanoseconds(1)), "nothing is due early")
        XCTAssertEqual(alarms.firstDue(now: t + .seconds(5))?.timer, .second, "of two due at once, the first case")
        XCTAssertEqual(alarms.firstDue(now: t + .seconds(5))?.at, t)
        XCTAssertTrue(alarms.isDue(.third, now: t))
        XCTAssertFalse(alarms.isDue(.first, now: t))
        alarms.deadlines[.second] = nil
        XCTAssertEqual(
            alarms.firstDue(now: t + .seconds(5))?.timer, .third, "an earlier deadline goes before an earlier case")
    }
}
