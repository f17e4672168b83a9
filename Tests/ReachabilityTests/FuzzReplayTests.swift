import Foundation
import NetCore
import Reachability
import XCTest

/// The fuzzer's seed corpus and every crash input it ever found, replayed on each test run.
final class FuzzReplayTests: XCTestCase {
    func testCorpusAndCrashInputsParseSafely() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var count = 0
        for folder in ["Fuzz/netlink/corpus", "Fuzz/netlink/crashes"] {
            let directory = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where !name.hasPrefix(".") {
                let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
                let result = NetlinkParser.parse(Array(bytes))
                XCTAssertLessThanOrEqual(result.messages.count + result.malformed, bytes.count / 16 + 1, name)
                for case .newLink(let link) in result.messages {
                    XCTAssertTrue(link.index > 0 && !link.name.isEmpty, name)
                }
                count += 1
            }
        }
        XCTAssertGreaterThanOrEqual(count, 8, "the seed corpus is there")
    }
}
