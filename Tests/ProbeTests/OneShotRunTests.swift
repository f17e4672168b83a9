import EventLoop
import Glibc
import NetAddress
import Probe
import ProbeRules
import XCTest

/// A run let go while under way (its target removed, its path gone) ends quietly: its timer and watch
/// go, its socket with it, and no completion comes.
final class OneShotRunTests: XCTestCase {
    func testARunLetGoUnderWayEndsQuietly() throws {
        // Its sockets are raw ones: root here, as in CI (NamespaceTests cover the runs' answers).
        guard geteuid() == 0 else { throw XCTSkip("the runs' sockets need CAP_NET_RAW") }
        let loop = try MainLoop()
        var answers = 0
        let loopback = Int32(if_nametoindex("lo"))
        var neighbor: NeighborCheckRun? = NeighborCheckRun(
            loop: loop, gateway: IPAddress("fe80::1")!, interfaceIndex: loopback, source: nil
        ) { _ in answers += 1 }
        var beyond: BeyondProbeRun? = BeyondProbeRun(
            loop: loop, host: IPAddress("127.0.0.1")!, gateway: IPAddress("127.0.0.2")!, hops: 1
        ) { _ in answers += 1 }
        loop.runTurn(waitingAtMost: .milliseconds(10))
        XCTAssertNotNil(neighbor)
        XCTAssertNotNil(beyond)
        neighbor = nil
        beyond = nil
        let until = ContinuousClock.now + .milliseconds(1_500)
        while ContinuousClock.now < until { loop.runTurn(waitingAtMost: .milliseconds(100)) }
        XCTAssertEqual(answers, 0, "a run let go still answered")
    }
}
