import Foundation
import NetAddress
import NetCore
import Reachability
import ReachabilityRules
import TestTime
import Timekeeping
import TrafficCensus
import XCTest

/// The fuzzer's seed corpus and every crash input it ever found, replayed on each test run.
final class FuzzReplayTests: XCTestCase {
    func testCorpusAndCrashInputsParseSafely() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
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

    /// The router options fuzzer's seeds and crash inputs: read without a trap, at most one prefix kept.
    func testRouterOptionCorpusAndCrashInputsAreReadSafely() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var count = 0
        var prefixes = 0
        for folder in ["Fuzz/router/corpus", "Fuzz/router/crashes"] {
            let directory = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where !name.hasPrefix(".") {
                let bytes = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
                let (options, _) = RouterOption.parse(bytes)
                XCTAssertLessThanOrEqual(options.count * 8, bytes.count, name)
                var core = ReachabilityCore { _ in .ethernet }
                let router = IPAddress.v6([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1])
                core.receive(
                    [
                        .newLink(Link(index: 2, name: "eth0", flags: 0x10041, type: 1)),
                        .newRoute(Route(family: 10, outputInterface: 2, gateway: router), sequence: 0),
                        .routerOptions(index: 2, options: bytes, source: router),
                    ],
                    malformed: 0, now: 1)
                XCTAssertLessThanOrEqual(core.nat64.count, 1, name)
                prefixes += core.nat64.count
                count += 1
            }
        }
        XCTAssertGreaterThanOrEqual(count, 7, "the seed corpus is there")
        XCTAssertGreaterThan(prefixes, 0, "some seeds carry a prefix")
    }

    /// The sock_diag fuzzer's seeds and crash inputs: never a trap, never more connections than messages.
    func testSocketDiagCorpusAndCrashInputsParseSafely() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var count = 0
        var connections = 0
        for folder in ["Fuzz/sockdiag/corpus", "Fuzz/sockdiag/crashes"] {
            let directory = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where !name.hasPrefix(".") {
                let bytes = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
                defer { buffer.deallocate() }
                buffer.copyBytes(from: bytes)
                var result = SocketDiagReply.Result()
                SocketDiagReply.parse(
                    UnsafeRawBufferPointer(rebasing: buffer[..<bytes.count]), sequence: 1, into: &result)
                XCTAssertLessThanOrEqual(result.connections.count, bytes.count / (16 + 72), name)
                connections += result.connections.count
                count += 1
            }
        }
        XCTAssertGreaterThanOrEqual(count, 4, "the seed corpus is there")
        XCTAssertEqual(connections, 3, "the seeds' connections answering request 1")
    }
}
