import Glibc
import MonitorRules
import TestTime
import Timekeeping
import XCTest

/// History as a pure structure: outages, their bounds, sleep, TimeInState, and the file.
final class OutageHistoryTests: XCTestCase {
    let second: UInt64 = 1_000_000
    let realStart: UInt64 = 1_800_000_000_000_000

    func fresh(minimum: UInt64 = 3_000_000) -> OutageHistory {
        var history = OutageHistory(began: realStart, minimumOutage: minimum)
        history.observeStart(boot: 0)
        return history
    }

    func testAnOutageRunsFromLeavingFullToFullAgainWithItsFirstBlameAndWorstValue() throws {
        var history = fresh()
        XCTAssertNil(history.observe(.full, blame: "", reason: "", boot: 1 * second, real: realStart + 1 * second))
        XCTAssertNil(history.observe(.limited, blame: "", reason: "host not answering", boot: 10 * second, real: realStart + 10 * second))
        XCTAssertNil(history.observe(.limited, blame: "upstream", reason: "gateway answers", boot: 11 * second, real: realStart + 11 * second))
        XCTAssertNil(history.observe(.none, blame: "link", reason: "no carrier", boot: 20 * second, real: realStart + 20 * second))
        let ended = try XCTUnwrap(history.observe(.full, blame: "", reason: "", boot: 70 * second, real: realStart + 70 * second))
        XCTAssertEqual(ended, Outage(start: realStart + 10 * second, duration: 60 * second, blame: "upstream", worst: .none,
                                     reason: "gateway answers"))
        XCTAssertEqual(history.latest(10), [ended])
    }

    func testABlipIsNoOutageAndStartUpIsNone() {
        var history = fresh(minimum: 3 * second)
        XCTAssertNil(history.observe(.none, blame: "link", reason: "", boot: 1 * second, real: realStart))
        XCTAssertNil(history.observe(.full, blame: "", reason: "", boot: 30 * second, real: realStart), "never full before: no outage")
        XCTAssertNil(history.observe(.limited, blame: "host", reason: "", boot: 40 * second, real: realStart))
        XCTAssertNil(history.observe(.full, blame: "", reason: "", boot: 42 * second, real: realStart), "2 s: a blip")
        XCTAssertTrue(history.outages.isEmpty)
    }

    func testSleepClosesTheOutageAndIsNeverInOne() throws {
        var history = fresh(minimum: 0)
        _ = history.observe(.full, blame: "", reason: "", boot: 0, real: realStart)
        _ = history.observe(.limited, blame: "upstream", reason: "", boot: 10 * second, real: realStart + 10 * second)
        let closed = try XCTUnwrap(history.suspend(boot: 15 * second))
        XCTAssertEqual(closed.duration, 5 * second, "closed at the moment of sleep")
        history.resume(boot: 615 * second, real: realStart + 615 * second)
        XCTAssertTrue(history.outageUnderway, "the fault still there after the resume is a new outage")
        let after = try XCTUnwrap(history.observe(.full, blame: "", reason: "", boot: 617 * second, real: realStart + 617 * second))
        XCTAssertEqual(after.duration, 2 * second)
        XCTAssertEqual(after.start, realStart + 615 * second)
        let times = Dictionary(uniqueKeysWithValues: history.timeInState(boot: 617 * second))
        XCTAssertEqual(times["asleep"], 600)
        XCTAssertEqual(times["limited"], 7)
        XCTAssertEqual(times["full"], 10)
    }

    func testASleepNobodyAnnouncedLeavesTheRunningValueAndTheOutage() throws {
        var history = fresh(minimum: 0)
        _ = history.observe(.full, blame: "", reason: "", boot: 0, real: realStart)
        _ = history.observe(.limited, blame: "host", reason: "", boot: 100 * second, real: realStart)
        history.slept(3_600 * second, boot: 3_720 * second)
        let ended = try XCTUnwrap(history.observe(.full, blame: "", reason: "", boot: 3_730 * second, real: realStart))
        XCTAssertEqual(ended.duration, 30 * second, "the hour asleep is no part of the outage")
        let times = Dictionary(uniqueKeysWithValues: history.timeInState(boot: 3_730 * second))
        XCTAssertEqual(times["asleep"], 3_600)
        XCTAssertEqual(times["limited"], 30)
    }

    func testTimeInStateAddsUpToTheTimeSinceTheHistoryBegan() {
        var history = fresh()
        var boot: UInt64 = 0
        let values: [Connectivity] = [.full, .limited, .full, .none, .portal, .full, .unknown, .full]
        for (index, value) in values.enumerated() {
            boot += UInt64(index + 1) * 7 * second + 123_456
            _ = history.observe(value, blame: "", reason: "", boot: boot, real: realStart)
        }
        _ = history.suspend(boot: boot + 5 * second)
        history.resume(boot: boot + 50 * second, real: realStart)
        let total = history.timeInState(boot: boot + 60 * second).reduce(UInt64(0)) { $0 + $1.1 }
        XCTAssertEqual(total, (boot + 60 * second) / second, "whole seconds, the fractions carried on: the sum is the time")
        var previous: [String: UInt64] = [:]
        var later = fresh()
        for step in 0..<400 {
            let at = UInt64(step) * 333_333
            _ = later.observe(step % 7 == 0 ? .limited : .full, blame: "", reason: "", boot: at, real: realStart)
            for (key, value) in later.timeInState(boot: at + 1) {
                XCTAssertGreaterThanOrEqual(value, previous[key] ?? 0, "\(key) never shrinks")
                previous[key] = value
            }
            XCTAssertEqual(later.secondsCounted(boot: at + 1), later.timeInState(boot: at + 1).reduce(0) { $0 + $1.1 })
        }
        XCTAssertEqual(Set(history.timeInState(boot: 0).map(\.0)), ["unknown", "none", "portal", "limited", "full", "asleep"])
    }

    func testTheHistoryKeepsAThousandOutagesAndThirtyDays() {
        var history = fresh(minimum: 0)
        var boot: UInt64 = 0
        _ = history.observe(.full, blame: "", reason: "", boot: boot, real: realStart)
        for index in 0..<1_100 {
            boot += second
            _ = history.observe(.none, blame: "link", reason: "\(index)", boot: boot, real: realStart + boot)
            boot += second
            _ = history.observe(.full, blame: "", reason: "", boot: boot, real: realStart + boot)
        }
        XCTAssertEqual(history.outages.count, OutageHistory.maximumOutages)
        XCTAssertEqual(history.latest(1).first?.reason, "1099", "newest first")
        history.prune(real: realStart + OutageHistory.maximumAge + 1_000 * second)
        XCTAssertLessThan(history.outages.count, OutageHistory.maximumOutages, "older than 30 days: gone")
    }

    func testTheFileRoundTripsAndAnythingOddIsCorrupt() throws {
        var history = fresh(minimum: 0)
        _ = history.observe(.full, blame: "", reason: "", boot: 0, real: realStart)
        _ = history.observe(.limited, blame: "gateway", reason: "gateway 198.18.0.1 does not\nanswer", boot: 5 * second, real: realStart)
        _ = history.observe(.full, blame: "", reason: "", boot: 9 * second, real: realStart)
        history.settle(boot: 10 * second)
        let text = OutageHistoryFile.encode(history)
        let back = try OutageHistoryFile.decode(Array(text.utf8)[...], minimumOutage: 0)
        XCTAssertEqual(back.outages, history.outages)
        XCTAssertEqual(back.outages.first?.reason, "gateway 198.18.0.1 does not answer", "one line per outage")
        XCTAssertEqual(back.spent, history.spent)
        XCTAssertEqual(back.began, realStart)
        let corrupt = [
            "", "netobserver-history 2\n", text + "outage 1 2 nowhere limited x\n", text + "outage 1 2 host full x\n",
            text + "spent full 1\n", text + "began 5\n", text + "garbage\n", text.replacingOccurrences(of: "began", with: "begun"),
            text + "outage -1 2 host none x\n", text + "outage 1 2 host none x\u{7}y\n",
        ]
        for bad in corrupt {
            XCTAssertThrowsError(try OutageHistoryFile.decode(Array(bad.utf8)[...], minimumOutage: 0), bad.debugDescription)
        }
        XCTAssertThrowsError(try OutageHistoryFile.decode([0xff, 0xfe][...], minimumOutage: 0))
        let huge = [UInt8](repeating: UInt8(ascii: "a"), count: OutageHistoryFile.maximumSize + 1)
        XCTAssertThrowsError(try OutageHistoryFile.decode(huge[...], minimumOutage: 0))
    }

    /// The history fuzzer's seeds and crash inputs: read without a trap, and what is written reads back.
    func testHistoryCorpusAndCrashInputsAreReadSafely() throws {
        let root = String(#filePath.prefix(upTo: #filePath.range(of: "/Tests/")!.lowerBound))
        var read = 0
        var taken = 0
        for folder in ["Fuzz/history/corpus", "Fuzz/history/crashes"] {
            for (name, bytes) in Self.files(in: root + "/" + folder) {
                read += 1
                guard var history = try? OutageHistoryFile.decode(bytes[...], minimumOutage: 0) else { continue }
                taken += 1
                history.observeStart(boot: 0)
                _ = history.timeInState(boot: 1)
                let back = try OutageHistoryFile.decode(Array(OutageHistoryFile.encode(history).utf8)[...], minimumOutage: 0)
                XCTAssertEqual(back.outages, history.outages, name)
            }
        }
        XCTAssertGreaterThanOrEqual(read, 7, "the seed corpus is there")
        XCTAssertEqual(taken, 5, "the well-formed seeds are taken, the others refused")
    }

    /// Every regular file in `directory` but the hidden ones, with its bytes.
    static func files(in directory: String) -> [(String, [UInt8])] {
        guard let listing = opendir(directory) else { return [] }
        defer { closedir(listing) }
        var found: [(String, [UInt8])] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
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
