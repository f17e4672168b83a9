import NetAddress
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// The verdict names the route's next hop (Gateway4/6): the gateway of the route the kernel chose,
/// nothing for an on-link destination or an unusable route.
final class GatewayTests: XCTestCase {
    let table: LinkTable = {
        var table = LinkTable()
        let up = KernelNumbers.linkUp | KernelNumbers.linkRunning | KernelNumbers.linkLowerUp
        _ = table.apply(.newLink(Link(index: 2, name: "eth0", flags: up, type: 1)))
        _ = table.apply(.newAddress(InterfaceAddress(index: 2, address: .v4([198, 18, 0, 2]), prefixLength: 24)))
        return table
    }()

    func verdict(_ route: Route) -> ReachabilityVerdict {
        ReachabilityEvaluation.verdict(target: .v4([198, 18, 2, 2]), lookup: .route(route), table: table) { _ in
            .ethernet
        }
    }

    func testTheRoutesNextHopIsTheGateway() {
        let routed = verdict(Route(family: 2, outputInterface: 2, gateway: .v4([198, 18, 0, 1])))
        XCTAssertTrue(routed.usable)
        XCTAssertEqual(routed.gateway, .v4([198, 18, 0, 1]))
        XCTAssertNil(verdict(Route(family: 2, outputInterface: 2)).gateway, "on-link")
        XCTAssertNil(
            verdict(Route(family: 2, outputInterface: 9, gateway: .v4([198, 18, 0, 1]))).gateway, "no usable route")
    }

    func testTheDefaultRoutesGatewayBeforeHostHasAnAddress() {
        var (core, target) = Nat64TableTests.makeCore()
        XCTAssertEqual(core.verdict(target)?.gateway, .v6([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1]))
        core.receive([.newLink(Link(index: 2, name: "eth0", flags: 0, type: 1))], malformed: 0, now: 1)
        core.evaluate()
        XCTAssertNil(core.verdict(target)?.gateway, "the link is down: no usable route, no next hop")
    }
}
