import NetAddress
import NetCore
import ReachabilityRules
import XCTest

/// Which of this machine's addresses the traffic evidence counts connections from: a rule of the
/// table, not a choice of the driver that samples.
final class TrafficSourcesTests: XCTestCase {
    func testTheUsableAddressesOfTheRoutesFamilyOnItsInterface() throws {
        var table = LinkTable()
        let up = KernelNumbers.linkUp | KernelNumbers.linkRunning | KernelNumbers.linkLowerUp
        table.apply(.newLink(Link(index: 3, name: "c0", flags: up, type: 1, kind: "veth")))
        table.apply(.newLink(Link(index: 4, name: "c1", flags: up, type: 1, kind: "veth")))
        let v4 = try XCTUnwrap(IPAddress("198.18.0.2")), other = try XCTUnwrap(IPAddress("198.18.1.2"))
        let global = try XCTUnwrap(IPAddress("2001:db8::2")), linkLocal = try XCTUnwrap(IPAddress("fe80::2"))
        let tentative = try XCTUnwrap(IPAddress("2001:db8::3"))
        for (index, address, flags) in [
            (Int32(3), v4, UInt32(0)), (4, other, 0), (3, global, 0), (3, linkLocal, 0),
            (3, tentative, KernelNumbers.addressTentative),
        ] {
            table.apply(
                .newAddress(
                    InterfaceAddress(
                        index: index, address: address, prefixLength: address.ipFamily == .v4 ? 24 : 64,
                        flags: flags)))
        }
        XCTAssertEqual(table.trafficSources(interface: "c0", family: .v4), [v4])
        XCTAssertEqual(
            Set(table.trafficSources(interface: "c0", family: .v6) ?? []), [global, linkLocal],
            "every usable IPv6 address (an interface has two at least); not one still being checked")
        XCTAssertEqual(table.trafficSources(interface: "c1", family: .v6), [])
        XCTAssertNil(table.trafficSources(interface: "gone0", family: .v4))
    }
}
