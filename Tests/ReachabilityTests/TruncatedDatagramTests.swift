import CLinux
import Glibc
import Reachability
import XCTest

/// "A truncated netlink datagram is an overrun": the kernel's state is dumped again, as
/// after ENOBUFS, never silently lost. No root needed: any user may dump the links.
final class TruncatedDatagramTests: XCTestCase {
    func testACutDatagramIsAnOverrunAndTheNextOneFits() throws {
        // Far smaller than one RTM_NEWLINK, so the kernel's first answer is cut.
        let socket = try NetlinkSocket(groups: 0, bufferSize: 64)
        try socket.send(NetlinkRequest.dump(Int32(RTM_GETLINK), sequence: 1))
        var outcomes: [String] = []
        for _ in 0..<100 {
            switch socket.receive() {
            case .wouldBlock: usleep(1_000); continue
            case .overrun: outcomes.append("overrun")
            case .dropped: outcomes.append("dropped")
            case .datagram: outcomes.append("datagram")
            }
            if outcomes.count == 1 { try socket.send(NetlinkRequest.dump(Int32(RTM_GETLINK), sequence: 2)) }
            if outcomes.contains("datagram") { break }
        }
        XCTAssertEqual(outcomes.first, "overrun", "\(outcomes)")
        XCTAssertTrue(outcomes.contains("datagram"), "after it the buffer fits the kernel's datagrams: \(outcomes)")
        XCTAssertFalse(outcomes.contains("dropped"), "only the kernel spoke")
    }
}
