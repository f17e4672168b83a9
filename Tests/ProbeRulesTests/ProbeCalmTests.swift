import ProbeRules
import TestTime
import Timekeeping
import XCTest

/// INTERFACE.md "Quiet by default", the probe core's part: under `adaptive`, a calm family (answering, Connectivity
/// `full`, no suspicion open) probes once per calm period; anything in doubt brings the Interval back at once;
/// `steady` is the seed's engine, whatever the path says.
final class ProbeCalmTests: XCTestCase {
    /// A host that answers each probe 5 ms after it goes out while `up`, around one core.
    struct Bench {
        var core: ProbeCore
        var now: Instant = 0
        var up = true
        var replies: [(at: Instant, sequence: UInt16, token: UInt64)] = []
        var sent: [Instant] = []

        init(_ settings: ProbeSettings) {
            core = ProbeCore(settings: settings, seed: 7)
            core.start(target: ProbeTarget(name: "h", family: .v4), method: .icmpDatagram, now: 0)
            take()
        }

        mutating func take() {
            for output in core.takeOutputs() {
                guard case .send(let sequence, let token, _, _, _) = output else { continue }
                sent.append(now)
                if up { replies.append((now + .milliseconds(5), sequence, token)) }
            }
        }

        mutating func run(until end: Instant) {
            while true {
                let reply = replies.map(\.at).min()
                guard let next = [reply, core.nextWakeup].compactMap({ $0 }).min(), next <= end else { break }
                now = next
                if let index = replies.firstIndex(where: { $0.at == next }) {
                    let answer = replies.remove(at: index)
                    core.receiveReply(sequence: answer.sequence, token: answer.token, now: now)
                } else {
                    core.handleTimeout(now: now)
                }
                take()
            }
            now = end
        }

        func sent(from start: Instant, to end: Instant) -> [Instant] { sent.filter { $0 >= start && $0 < end } }
    }

    static func settings(_ probing: Probing, idle: UInt32 = 3000) -> ProbeSettings {
        ProbeSettings(
            intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 2, recoveryThreshold: 1,
            probing: probing, idleIntervalMilliseconds: idle)
    }

    /// The section's calm budget, scaled: Interval 1000, IdleInterval 3000, a minute healthy and idle: at most 21
    /// probes (60 under `steady`).
    func testACalmHostIsProbedOncePerCalmPeriod() {
        var adaptive = Bench(Self.settings(.adaptive))
        adaptive.run(until: 60 * second)
        let minute = adaptive.sent(from: 0, to: 60 * second).count
        XCTAssertLessThanOrEqual(minute, 21, "\(minute) probes in a minute")
        XCTAssertGreaterThanOrEqual(minute, 19, "one per calm period is still sent")
        XCTAssertTrue(adaptive.core.isCalm)
        let gaps = zip(adaptive.sent.dropFirst(), adaptive.sent).map { $0 - $1 }
        XCTAssertEqual(gaps.dropFirst().allSatisfy { $0 == 3 * second }, true, "\(gaps)")
        XCTAssertEqual(gaps.first, 3 * second + 5 * ms, "the first calm probe: a calm period after the answer")
        var steady = Bench(Self.settings(.steady))
        steady.run(until: 60 * second)
        XCTAssertEqual(steady.sent(from: 0, to: 60 * second).count, 60)
        XCTAssertFalse(steady.core.isCalm)
    }

    /// The price, stated: a silent outage of a calm idle host is confirmed within IdleInterval + (FailureThreshold
    /// − 1) × min(Interval, Timeout) + Timeout; the lost calm probe brings the Interval back at once.
    func testASilentOutageOfACalmHostIsConfirmedWithinTheStatedBound() {
        var bench = Bench(Self.settings(.adaptive, idle: 60_000))
        bench.run(until: 100 * second)
        XCTAssertEqual(bench.core.verdict.answering, true)
        bench.up = false
        let outage: Instant = 100 * second
        var confirmed: Instant?
        while confirmed == nil, bench.now < 200 * second {
            bench.run(until: bench.now + 100 * ms)
            if bench.core.verdict.answering == false { confirmed = bench.now }
        }
        let bound: Duration = 60 * second + 1 * second + 1 * second
        XCTAssertNotNil(confirmed)
        XCTAssertLessThanOrEqual((confirmed ?? .origin) - outage, bound + 100 * ms)
        XCTAssertFalse(bench.core.isCalm)
        // Unsure now: at the Interval, as `steady`, until it answers again.
        let before = bench.sent.count
        bench.run(until: bench.now + 10 * second)
        XCTAssertGreaterThanOrEqual(bench.sent.count - before, 9)
        bench.up = true
        bench.run(until: bench.now + 2 * second)
        XCTAssertEqual(bench.core.verdict.answering, true, "recovery as fast as under steady")
    }

    /// Every suspicion probes a calm family at once; the Interval rules until RecoveryThreshold probes sent after it
    /// are answered; then calm again, a calm period after the answer that decided.
    func testASuspicionProbesAtOnceAndTheIntervalRulesUntilItCloses() {
        var bench = Bench(Self.settings(.adaptive, idle: 60_000))
        bench.run(until: 10 * second)
        XCTAssertTrue(bench.core.isCalm)
        let asked: Instant = 10 * second
        bench.core.suspect(now: asked)
        bench.take()
        XCTAssertEqual(bench.sent.last, asked, "a suspicion probes at once")
        XCTAssertTrue(bench.core.suspicionOpen)
        bench.run(until: 11 * second)
        XCTAssertFalse(bench.core.suspicionOpen, "one answer (RecoveryThreshold 1) after it closes it")
        XCTAssertTrue(bench.core.isCalm)
        XCTAssertEqual(bench.core.nextScheduledProbe, asked + 5 * ms + 60 * second)
        // A stall, a resume, a route regained: each a suspicion, each at once.
        bench.run(until: 20 * second)
        bench.core.trafficChanged(.stalled, now: 20 * second)
        bench.take()
        XCTAssertEqual(bench.sent.last, 20 * second, "\(bench.sent)")
        bench.run(until: 30 * second)
        bench.core.routeRegained(now: 30 * second)
        bench.take()
        XCTAssertEqual(bench.sent.last, 30 * second)
        bench.run(until: 40 * second)
        bench.core.suspend()
        bench.run(until: 50 * second)
        XCTAssertEqual(bench.sent.last, 30 * second, "nothing while asleep, nor while calm")
        bench.core.resume(now: 50 * second)
        bench.take()
        XCTAssertEqual(bench.sent.last, 50 * second)
    }

    /// Connectivity not `full` (a portal, limited) is unsure: the Interval; a metered link makes the calm period
    /// four times as long.
    func testConnectivityNotFullIsUnsureAndMeteredIsFourTimesAsLong() {
        var bench = Bench(Self.settings(.adaptive))
        bench.run(until: 10 * second)
        bench.core.pathSays(connectivityFull: false, metered: false, now: bench.now)
        XCTAssertFalse(bench.core.isCalm)
        let before = bench.sent.count
        bench.run(until: 20 * second)
        XCTAssertGreaterThanOrEqual(bench.sent.count - before, 9, "the Interval while not full")
        bench.core.pathSays(connectivityFull: true, metered: true, now: bench.now)
        XCTAssertEqual(bench.core.calmPeriod, 12 * second)
        let calmFrom = bench.sent.count
        bench.run(until: 20 * second + 60 * second)
        XCTAssertLessThanOrEqual(bench.sent.count - calmFrom, 5, "metered: one per 12 s")
    }

    /// `steady` is the seed's engine: what the path says and suspicions from outside change nothing it sends.
    func testSteadyIgnoresEverySuspicionFromOutside() {
        var plain = Bench(Self.settings(.steady))
        var told = Bench(Self.settings(.steady))
        for second in 1...30 {
            let at = Instant.origin + .seconds(UInt64(second))
            plain.run(until: at)
            told.run(until: at)
            told.core.suspect(now: at)
            told.core.pathSays(connectivityFull: second % 2 == 0, metered: second % 3 == 0, now: at)
            told.take()
        }
        XCTAssertEqual(plain.sent, told.sent)
    }
}
