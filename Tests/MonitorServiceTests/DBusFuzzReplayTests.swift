import DBusFuzzHarness
import Foundation
import XCTest

/// The D-Bus fuzzer's seeds and every crash input it ever found, through the same harness.
final class DBusFuzzReplayTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func inputs(_ folder: String) throws -> [(String, [UInt8])] {
        let directory = root.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            .filter { !$0.hasPrefix(".") }
            .map { ($0, Array(try Data(contentsOf: directory.appendingPathComponent($0)))) }
    }

    func testSeedsReachTheRealDispatch() throws {
        let seeds = try inputs("Fuzz/dbus/corpus")
        XCTAssertGreaterThanOrEqual(seeds.count, 20)
        for (name, bytes) in seeds {
            let sent = DBusFuzzHarness.run(bytes)
            switch name {
            case "check-noreply": XCTAssertEqual(sent, 0, name)
            case "wait-100", "target-wait": XCTAssertEqual(sent, 0, "pending: \(name)")
            case "set-host", "set-host-zone", "set-interval", "set-family", "target-set-host", "add-target",
                "remove-target":
                XCTAssertGreaterThanOrEqual(
                    sent, 2, "the reply and PropertiesChanged (or InterfacesAdded/Removed): \(name)")
            default: XCTAssertEqual(sent, 1, "one answer: \(name)")
            }
        }
    }

    func testCrashInputsAndMutationsAreSafe() throws {
        for (_, bytes) in try inputs("Fuzz/dbus/crashes") { DBusFuzzHarness.run(bytes) }
        // Without libFuzzer: every seed cut short and with each byte flipped.
        for (_, bytes) in try inputs("Fuzz/dbus/corpus") {
            for length in stride(from: 0, to: bytes.count, by: 7) { DBusFuzzHarness.run(Array(bytes[..<length])) }
            for index in bytes.indices {
                var mutated = bytes
                mutated[index] ^= 0xFF
                DBusFuzzHarness.run(mutated)
            }
        }
    }

    /// The other surfaces' seeds, crash inputs and mutations, through the fuzzer's own harness
    /// (the D-Bus one's above, with what each seed must send).
    func testEverySurfaceTakesItsSeedsCrashesAndMutations() throws {
        for surface in FuzzSurface.allCases where surface != .dbus {
            let seeds = try inputs("Fuzz/\(surface.rawValue)/corpus")
            XCTAssertGreaterThanOrEqual(seeds.count, 2, surface.rawValue)
            for (_, bytes) in try inputs("Fuzz/\(surface.rawValue)/crashes") + seeds { surface.run(bytes) }
            for (_, bytes) in seeds {
                for length in stride(from: 0, to: bytes.count, by: 5) { surface.run(Array(bytes[..<length])) }
                for index in bytes.indices {
                    var mutated = bytes
                    mutated[index] ^= 0xFF
                    surface.run(mutated)
                }
            }
        }
    }
}
