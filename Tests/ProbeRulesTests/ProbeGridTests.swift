import ProbeRules
import TestTime
import Timekeeping
import XCTest

/// The schedule's probes on the Interval's grid: targets added at any moment come to probe together, no gap
/// shorter than the Interval or longer than 17/16 of it, and a late wake-up keeps the grid.
final class ProbeGridTests: XCTestCase {
    private let interval: Duration = 1000 * ms

    func testAScheduleOffTheGridReachesItInSixteenProbesWithNoGapOutsideTheBounds() {
        for phase in [1, 437, 500, 938, 999] as [UInt64] {
            var sent: Instant = phase * ms
            var onGrid = false
            for probe in 1...16 {
                let next = ProbeGrid.next(after: sent, interval: interval)
                XCTAssertGreaterThanOrEqual(next - sent, interval, "phase \(phase), probe \(probe)")
                XCTAssertLessThanOrEqual(next - sent, interval + interval / 16, "phase \(phase), probe \(probe)")
                sent = next
                onGrid = sent.nanoseconds % interval.nanoseconds == 0
                if onGrid { break }
            }
            XCTAssertTrue(onGrid, "phase \(phase) ms: still off the grid at \(sent)")
        }
    }

    func testALateWakeUpKeepsTheTickItWasDueAt() {
        let tick: Instant = 7000 * ms
        XCTAssertEqual(ProbeGrid.next(after: tick + 3 * ms, due: tick, interval: interval), 8000 * ms)
        // Later than a whole Interval (a stalled machine): the schedule starts again from now, never at once.
        let resumed = ProbeGrid.next(after: tick + 2500 * ms, due: tick, interval: interval)
        XCTAssertGreaterThanOrEqual(resumed, tick + 3500 * ms)
    }

    func testIntervalsThatAreMultiplesOfEachOtherShareTheirTicks() {
        // The other family's relaxed 30-s schedule falls on ticks of the headline's 1-s one.
        let thirty: Duration = 30_000 * ms
        var slow: Instant = 12_345 * ms
        for _ in 0..<16 { slow = ProbeGrid.next(after: slow, due: slow, interval: thirty) }
        XCTAssertEqual(slow.nanoseconds % thirty.nanoseconds, 0)
        XCTAssertEqual(slow.nanoseconds % interval.nanoseconds, 0)
    }

    /// Two targets' cores added 437 ms apart send their scheduled probes at the same instants within 16 s.
    func testTwoTargetsAddedApartComeToProbeTogether() {
        var cores = [
            ProbeCore(settings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 500), seed: 1),
            ProbeCore(settings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 500), seed: 2),
        ]
        let starts: [Instant] = [100 * ms, 537 * ms]
        var sends: [[Instant]] = [[], []]
        var now = Instant.origin
        var started = [false, false]
        while now < 20_000 * ms {
            for index in cores.indices {
                if !started[index], now >= starts[index] {
                    started[index] = true
                    cores[index].start(
                        target: ProbeTarget(name: "h\(index)", family: .v4), method: .icmpDatagram, now: now)
                }
                if let due = cores[index].nextWakeup, due <= now { cores[index].handleTimeout(now: now) }
                for case .send(let sequence, let token, _, _, _) in cores[index].takeOutputs() {
                    sends[index].append(now)
                    cores[index].receiveReply(sequence: sequence, token: token, now: now)
                    _ = cores[index].takeOutputs()
                }
            }
            let wakeups = cores.compactMap(\.nextWakeup).filter { $0 > now }
            now = wakeups.min() ?? now + Duration.milliseconds(1)
        }
        XCTAssertEqual(Array(sends[0].suffix(4)), Array(sends[1].suffix(4)), "\(sends)")
        for series in sends {
            for (earlier, later) in zip(series, series.dropFirst()) {
                XCTAssertGreaterThanOrEqual(later - earlier, interval)
                XCTAssertLessThanOrEqual(later - earlier, interval + interval / 16)
            }
        }
    }
}
