import Glibc
import MonitorRules
import TestTime
import Timekeeping
import XCTest

/// History as a pure structure: outages, their bounds, sleep, TimeInState, and the file.
final class OutageHistoryTests: XCTestCase {
    let second = Duration.seconds(1)
    let realStart = WallTime(microseconds: 1_800_000_000_000_000)

    func fresh(minimum: Duration = .seconds(3)) -> OutageHistory {
        var history = OutageHistory(began: realStart, minimumOutage: minimum)
        history.observeStart(boot: afterBoot(.zero))
        return history
    }

    /// CLOCK_BOOTTIME reading `time` after boot.
    func afterBoot(_ time: Duration) -> BootTime { BootTime(sinceBoot: time) }

    func testAnOutageRunsFromLeavingFullToFullAgainWithItsFirstBlameAndWorstValue() throws {
        var history = fresh()
        XCTAssertNil(
            history.observe(.full, blame: nil, reason: "", boot: afterBoot(1 * second), real: realStart + 1 * second))
        XCTAssertNil(
            history.observe(
                .limited, blame: nil, reason: "host not answering", boot: afterBoot(10 * second),
                real: realStart + 10 * second))
        XCTAssertNil(
            history.observe(
                .limited, blame: .upstream, reason: "gateway answers", boot: afterBoot(11 * second),
                real: realStart + 11 * second))
        XCTAssertNil(
            history.observe(
                .none, blame: .link, reason: "no carrier", boot: afterBoot(20 * second), real: realStart + 20 * second))
        let ended = try XCTUnwrap(
            history.observe(.full, blame: nil, reason: "", boot: afterBoot(70 * second), real: realStart + 70 * second))
        XCTAssertEqual(
            ended,
            Outage(
                start: realStart + 10 * second, duration: 60 * second, blame: "upstream", worst: .none,
                reason: "gateway answers"))
        XCTAssertEqual(history.latest(10), [ended])
    }

    func testABlipIsNoOutageAndStartUpIsNone() {
        var history = fresh(minimum: 3 * second)
        XCTAssertNil(history.observe(.none, blame: .link, reason: "", boot: afterBoot(1 * second), real: realStart))
        XCTAssertNil(
            history.observe(.full, blame: nil, reason: "", boot: afterBoot(30 * second), real: realStart),
            "never full before: no outage")
        XCTAssertNil(history.observe(.limited, blame: .host, reason: "", boot: afterBoot(40 * second), real: realStart))
        XCTAssertNil(
            history.observe(.full, blame: nil, reason: "", boot: afterBoot(42 * second), real: realStart), "2 s: a blip"
        )
        XCTAssertTrue(history.outages.isEmpty)
    }

    func testSleepClosesTheOutageAndIsNeverInOne() throws {
        var history = fresh(minimum: .zero)
        _ = history.observe(.full, blame: nil, reason: "", boot: afterBoot(.zero), real: realStart)
        _ = history.observe(
            .limited, blame: .upstream, reason: "", boot: afterBoot(10 * second), real: realStart + 10 * second)
        let closed = try XCTUnwrap(history.suspend(boot: afterBoot(15 * second)))
        XCTAssertEqual(closed.duration, 5 * second, "closed at the moment of sleep")
        history.resume(boot: afterBoot(615 * second), real: realStart + 615 * second)
        XCTAssertTrue(history.outageUnderway, "the fault still there after the resume is a new outage")
        let after = try XCTUnwrap(
            history.observe(
                .full, blame: nil, reason: "", boot: afterBoot(617 * second), real: realStart + 617 * second))
        XCTAssertEqual(after.duration, 2 * second)
        XCTAssertEqual(after.start, realStart + 615 * second)
        let times = Dictionary(uniqueKeysWithValues: history.timeInState(boot: afterBoot(617 * second)))
        XCTAssertEqual(times["asleep"], 600)
        XCTAssertEqual(times["limited"], 7)
        XCTAssertEqual(times["full"], 10)
    }

    func testASleepNobodyAnnouncedLeavesTheRunningValueAndTheOutage() throws {
        var history = fresh(minimum: .zero)
        _ = history.observe(.full, blame: nil, reason: "", boot: afterBoot(.zero), real: realStart)
        _ = history.observe(.limited, blame: .host, reason: "", boot: afterBoot(100 * second), real: realStart)
        history.slept(3_600 * second, boot: afterBoot(3_720 * second))
        let ended = try XCTUnwrap(
            history.observe(.full, blame: nil, reason: "", boot: afterBoot(3_730 * second), real: realStart))
        XCTAssertEqual(ended.duration, 30 * second, "the hour asleep is no part of the outage")
        let times = Dictionary(uniqueKeysWithValues: history.timeInState(boot: afterBoot(3_730 * second)))
        XCTAssertEqual(times["asleep"], 3_600)
        XCTAssertEqual(times["limited"], 30)
    }

    func testTimeInStateAddsUpToTheTimeSinceTheHistoryBegan() {
        var history = fresh()
        var boot = Duration.zero
        let values: [Connectivity] = [.full, .limited, .full, .none, .portal, .full, .unknown, .full]
        for (index, value) in values.enumerated() {
            boot += UInt64(index + 1) * 7 * second + .microseconds(123_456)
            _ = history.observe(value, blame: nil, reason: "", boot: afterBoot(boot), real: realStart)
        }
        _ = history.suspend(boot: afterBoot(boot + 5 * second))
        history.resume(boot: afterBoot(boot + 50 * second), real: realStart)
        let total = history.timeInState(boot: afterBoot(boot + 60 * second)).reduce(UInt64(0)) { $0 + $1.1 }
        XCTAssertEqual(
            total, (boot + 60 * second) / second, "whole seconds, the fractions carried on: the sum is the time")
        var previous: [String: UInt64] = [:]
        var later = fresh()
        for step in 0..<400 {
            let at = Duration.microseconds(UInt64(step) * 333_333)
            _ = later.observe(
                step % 7 == 0 ? .limited : .full, blame: nil, reason: "", boot: afterBoot(at), real: realStart)
            for (key, value) in later.timeInState(boot: afterBoot(at + .microseconds(1))) {
                XCTAssertGreaterThanOrEqual(value, previous[key] ?? 0, "\(key) never shrinks")
                previous[key] = value
            }
            XCTAssertEqual(
                later.secondsCounted(boot: afterBoot(at + .microseconds(1))),
                later.timeInState(boot: afterBoot(at + .microseconds(1))).reduce(0) { $0 + $1.1 })
        }
        XCTAssertEqual(
            Set(history.timeInState(boot: afterBoot(.zero)).map(\.0)),
            ["unknown", "none", "portal", "limited", "full", "asleep"])
    }

    func testTheHistoryKeepsAThousandOutagesAndThirtyDays() {
        var history = fresh(minimum: .zero)
        var boot = Duration.zero
        _ = history.observe(.full, blame: nil, reason: "", boot: afterBoot(boot), real: realStart)
        for index in 0..<1_100 {
            boot += second
            _ = history.observe(.none, blame: .link, reason: "\(index)", boot: afterBoot(boot), real: realStart + boot)
            boot += second
            _ = history.observe(.full, blame: nil, reason: "", boot: afterBoot(boot), real: realStart + boot)
        }
        XCTAssertEqual(history.outages.count, OutageHistory.maximumOutages)
        XCTAssertEqual(history.latest(1).first?.reason, "1099", "newest first")
        history.prune(real: realStart + OutageHistory.maximumAge + 1_000 * second)
        XCTAssertLessThan(history.outages.count, OutageHistory.maximumOutages, "older than 30 days: gone")
    }

    func testTheFileRoundTripsAndAnythingOddIsCorrupt() throws {
        var history = fresh(minimum: .zero)
        _ = history.observe(.full, blame: nil, reason: "", boot: afterBoot(.zero), real: realStart)
        _ = history.observe(
            .limited, blame: .gateway, reason: "gateway 198.18.0.1 does not\nanswer", boot: afterBoot(5 * second),
            real: realStart)
        _ = history.observe(.full, blame: nil, reason: "", boot: afterBoot(9 * second), real: realStart)
        history.settle(boot: afterBoot(10 * second))
        let text = OutageHistoryFile.encode(history)
        let back = try OutageHistoryFile.decode(Array(text.utf8)[...], minimumOutage: .zero)
        XCTAssertEqual(back.outages, history.outages)
        XCTAssertEqual(back.outages.first?.reason, "gateway 198.18.0.1 does not answer", "one line per outage")
        XCTAssertEqual(back.spent, history.spent)
        XCTAssertEqual(back.began, realStart)
        let corrupt = [
            "", "netobserver-history 2\n", text + "outage 1 2 nowhere limited x\n", text + "outage 1 2 host full x\n",
            text + "spent full 1\n", text + "began 5\n", text + "garbage\n",
            text.replacingOccurrences(of: "began", with: "begun"),
            text + "outage -1 2 host none x\n", text + "outage 1 2 host none x\u{7}y\n",
            text + "outage 18446744073709552 2 host none x\n", text + "spent asleep 18446744073709552\n",
        ]
        for bad in corrupt {
            XCTAssertThrowsError(
                try OutageHistoryFile.decode(Array(bad.utf8)[...], minimumOutage: .zero), bad.debugDescription)
        }
        XCTAssertThrowsError(try OutageHistoryFile.decode([0xff, 0xfe][...], minimumOutage: .zero))
        let huge = [UInt8](repeating: UInt8(ascii: "a"), count: OutageHistoryFile.maximumSize + 1)
        XCTAssertThrowsError(try OutageHistoryFile.decode(huge[...], minimumOutage: .zero))
    }

    /// The history fuzzer's seeds and crash inputs: read without a trap, and what is written reads back.
    func testHistoryCorpusAndCrashInputsAreReadSafely() throws {
        let root = String(#filePath.prefix(upTo: #filePath.range(of: "/Tests/")!.lowerBound))
        var read = 0
        var taken = 0
        for folder in ["Fuzz/history/corpus", "Fuzz/history/crashes"] {
            for (name, bytes) in Self.files(in: root + "/" + folder) {
                read += 1
                guard var history = try? OutageHistoryFile.decode(bytes[...], minimumOutage: .zero) else { continue }
                taken += 1
                history.observeStart(boot: afterBoot(.zero))
                _ = history.timeInState(boot: afterBoot(.microseconds(1)))
                let back = try OutageHistoryFile.decode(
                    Array(OutageHistoryFile.encode(history).utf8)[...], minimumOutage: .zero)
                XCTAssertEqual(back.outages, history.outages, name)
            }
        }
        XCTAssertGreaterThanOrEqual(read, 7, "the seed corpus is there")
        // huge-counters is refused too: its µs are more than a Duration holds (about 584 years).
        XCTAssertEqual(taken, 4, "the well-formed seeds are taken, the others refused")
    }

    /// Every regular file in `directory` but the hidden ones, with its bytes.
    static func files(in directory: String) -> [(String, [UInt8])] {
        guard let listing = opendir(directory) else { return [] }
        defer { closedir(listing) }
        var found: [(String, [UInt8])] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix("."), let file = fopen(directory + "/" + name, "rb") else { continue }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = fread(&chunk, 1, chunk.count, file)
                if count == 0 { break }
                bytes += chunk[..<count]
            }
            fclose(file)
            found.append((name, bytes))
        }
        return found
    }
}
