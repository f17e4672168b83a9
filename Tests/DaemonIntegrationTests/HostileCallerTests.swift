import Foundation
import IntegrationSupport
import XCTest

/// INTERFACE.md "Hostile callers", each bullet tried as a local attacker would
/// (clients/hostile.py). Its `measured` lines go to the test log.
final class HostileCallerTests: DaemonTestCase {
    override var busAllowsAnyUser: Bool { true }

    private func hostile(
        _ group: String, timeout: TimeInterval = 120, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let output = try python("hostile.py", [String(daemon.pid), group], timeout: timeout, file: file, line: line)
        for text in output.split(separator: "\n") where text.hasPrefix("measured") || text.hasPrefix("seed") {
            print("hostile \(group): \(text)")
        }
        XCTAssertTrue(daemon.process.isRunning, "the daemon survived: \(daemon.log)", file: file, line: line)
        // A timing, so reported rather than asserted.
        let slow = daemon.log.split(separator: "\n").filter { $0.contains("one loop turn took") }
        print(
            "hostile \(group): measured \(slow.count) loop turns over 50 ms\(slow.isEmpty ? "" : ": " + slow.joined(separator: "; "))"
        )
    }

    func testOversizedArgumentsAreRefusedWithoutDecoding() throws { try hostile("oversized") }
    func testOneUserCannotTakeEveryPendingCall() throws {
        guard geteuid() == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { return XCTFail("needs root, and CI runs as root") }
            throw XCTSkip("acting as other users needs root; skipped as uid \(geteuid())")
        }
        try hostile("per_user", timeout: 120)
    }
    func testHugeNamesAreQuotedCutAndCostNothing() throws { try hostile("huge_names", timeout: 180) }
    func testHugePathsAreNeverSplit() throws { try hostile("huge_paths", timeout: 180) }
    func testACheckURLIntoThisMachineIsRefused() throws { try hostile("check_url_inward") }
    func testDescriptorsAreRefusedAndClosed() throws { try hostile("descriptors") }
    func testNoReplyCallsGetNoAnswerAndKeepNothingPending() throws { try hostile("no_reply") }
    func testPeerTakesNoArgumentsAndSetTakesNoNestedVariant() throws { try hostile("arguments") }
    func testAtMost4096PendingCallsInAll() throws { try hostile("pending_cap", timeout: 180) }
    func testTenThousandRandomCallsLeaveMemoryAndDescriptorsFlat() throws { try hostile("random", timeout: 300) }
}
