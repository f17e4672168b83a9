@testable import Probe
import Glibc
import ProbeRules
import XCTest

/// A TCP probe's outcome as TCPProbe reads it from the socket, and what the probe core hears of it.
final class TCPOutcomeTests: XCTestCase {
    func testTheSocketsErrorAndItsErrorQueueMakeTheOutcome() {
        XCTAssertEqual(TCPProbe.outcome(0, cameWithICMPError: false), .accepted)
        XCTAssertEqual(TCPProbe.outcome(ECONNREFUSED, cameWithICMPError: false), .reset, "the host's RST")
        XCTAssertEqual(
            TCPProbe.outcome(ECONNREFUSED, cameWithICMPError: true), .icmpError(errno: ECONNREFUSED),
            "a router's Port Unreachable (a firewall's REJECT)")
        XCTAssertEqual(TCPProbe.outcome(EHOSTUNREACH, cameWithICMPError: true), .icmpError(errno: EHOSTUNREACH))
        XCTAssertEqual(TCPProbe.outcome(EHOSTUNREACH, cameWithICMPError: false), .localRefusal(errno: EHOSTUNREACH))
        XCTAssertEqual(TCPProbe.outcome(ENETUNREACH, cameWithICMPError: false), .localRefusal(errno: ENETUNREACH))
        XCTAssertEqual(TCPProbe.outcome(EPERM, cameWithICMPError: false), .localRefusal(errno: EPERM))
        XCTAssertEqual(TCPProbe.outcome(ETIMEDOUT, cameWithICMPError: false), .failed(errno: ETIMEDOUT))
    }

    func testOnlyTheHostAnswersAndOnlyThisMachineRefuses() {
        let describe: (Int32) -> String = { "error \($0)" }
        for alone in [true, false] {
            XCTAssertEqual(
                TCPOutcome.accepted.input(sequence: 7, token: 9, alone: alone, describe: describe),
                .reply(sequence: 7, token: 9, via: .tcp))
            XCTAssertEqual(
                TCPOutcome.reset.input(sequence: 7, token: 9, alone: alone, describe: describe),
                .reply(sequence: 7, token: 9, via: .tcp))
            XCTAssertNil(
                TCPOutcome.icmpError(errno: ECONNREFUSED).input(
                    sequence: 7, token: 9, alone: alone, describe: describe),
                "a router spoke: the deadline counts the probe")
            XCTAssertNil(
                TCPOutcome.failed(errno: ETIMEDOUT).input(sequence: 7, token: 9, alone: alone, describe: describe))
        }
        XCTAssertEqual(
            TCPOutcome.localRefusal(errno: 101).input(sequence: 7, token: 9, alone: true, describe: describe),
            .refused(sequence: 7, token: 9, reason: "error 101"), "the connection is the probe: refused at once")
        XCTAssertNil(
            TCPOutcome.localRefusal(errno: 101).input(sequence: 7, token: 9, alone: false, describe: describe),
            "beside an echo request, the echo's own send says so")
    }
}
