@testable import Probe
import Foundation
import ProbeRules
import XCTest

/// The echo fuzzer's seed corpus and every crash input it found, replayed on each run.
final class EchoFuzzReplayTests: XCTestCase {
    func testCorpusAndCrashInputsParseSafely() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var count = 0
        for folder in ["Fuzz/echo/corpus", "Fuzz/echo/crashes"] {
            let directory = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where !name.hasPrefix(".") {
                let data = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
                guard let selector = data.first else { continue }
                let kinds: [(EchoPacket.Family, Bool)] = [(.v4, true), (.v4, false), (.v6, false)]
                let (family, withHeader) = kinds[Int(selector) % kinds.count]
                let parsed = EchoPacket.parse(Array(data.dropFirst()), family: family, includesIPHeader: withHeader)
                if name.hasSuffix("reply") {
                    guard case .reply = parsed else { return XCTFail("\(name): \(parsed)") }
                }
                if name.hasSuffix("unreachable") {
                    guard case .error(.unreachable, _, _, _, _) = parsed else { return XCTFail("\(name): \(parsed)") }
                }
                count += 1
            }
        }
        XCTAssertGreaterThanOrEqual(count, 6)
    }
}
