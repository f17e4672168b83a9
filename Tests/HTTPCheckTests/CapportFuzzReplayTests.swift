import Foundation
import MonitorRules
import TestTime
import Timekeeping
import XCTest

/// The captive-portal API fuzzer's seeds and crash inputs: read without a trap; a portal only ever
/// with an https URL to sign in at.
final class CapportFuzzReplayTests: XCTestCase {
    func testCapportCorpusAndCrashInputsAreReadSafely() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var count = 0
        var captive = 0
        for folder in ["Fuzz/capport/corpus", "Fuzz/capport/crashes"] {
            let directory = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where !name.hasPrefix(".") {
                let bytes = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
                let result = CapportAnswer.parse(bytes)
                if case .success(let answer) = result, answer.captive {
                    XCTAssertTrue(answer.userPortalURL.map(CapportAnswer.isSecureURL) == true, name)
                    captive += 1
                }
                // And the follower taking it, as the fuzzer does (a huge seconds-remaining once overflowed here).
                var follower = CapportFollower()
                if case .fetch(_, let generation)? = follower.announced("https://api.test/", now: 0).last {
                    _ = follower.fetched(generation: generation, result, now: 1)
                    XCTAssertNotNil(follower.nextWakeup, name)
                }
                count += 1
            }
        }
        XCTAssertGreaterThanOrEqual(count, 8, "the seed corpus is there")
        XCTAssertEqual(captive, 1, "one seed is a portal")
    }
}
