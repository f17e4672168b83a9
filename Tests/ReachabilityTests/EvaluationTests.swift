import CLinux
import Glibc
import NetAddress
import NetCore
import Reachability
import ReachabilityRules
import XCTest

final class EvaluationTests: XCTestCase {
    private let up = UInt32(IFF_UP.rawValue | IFF_RUNNING.rawValue | IFF_LOWER_UP.rawValue)
    private let target = IPAddress("198.18.2.2")!

    private func table(flags: UInt32? = nil, addresses: [InterfaceAddress] = []) -> LinkTable {
        var table = LinkTable()
        table.apply(.newLink(Link(index: 3, name: "c0", flags: flags ?? up, type: UInt16(ARPHRD_ETHER), kind: "veth")))
        for address in addresses { table.apply(.newAddress(address)) }
        return table
    }

    private func verdict(_ table: LinkTable, _ lookup: RouteLookup, target: IPAddress? = nil) -> ReachabilityVerdict {
        ReachabilityEvaluation.verdict(target: target ?? self.target, lookup: lookup, table: table) { _ in .ethernet }
    }

    private var route: RouteLookup {
        .route(
            Route(
                family: UInt8(AF_INET), outputInterface: 3, gateway: IPAddress("198.18.0.1"),
                preferredSource: IPAddress("198.18.0.2")))
    }

    func testUsablePath() {
        let v = verdict(
            table(addresses: [InterfaceAddress(index: 3, address: IPAddress("198.18.0.2")!, prefixLength: 24)]), route)
        var expected = ReachabilityVerdict(usable: true, interface: "c0", kind: .ethernet, source: "198.18.0.2")
        expected.gateway = IPAddress("198.18.0.1")
        expected.interfaceIndex = 3
        expected.hasNeighbors = true
        XCTAssertEqual(v, expected, "the route's next hop is the verdict's gateway, on a link with neighbours")
    }

    func testReasons() {
        XCTAssertEqual(verdict(table(), .failed(errno: ENETUNREACH)).reason, "no route to 198.18.2.2")
        XCTAssertEqual(
            verdict(table(flags: 0), route),
            ReachabilityVerdict(usable: false, interface: "c0", reason: "interface c0 is down"))
        XCTAssertEqual(verdict(table(flags: UInt32(IFF_UP.rawValue)), route).reason, "interface c0 has no carrier")
        XCTAssertEqual(
            verdict(LinkTable(), route).reason, "the route to 198.18.2.2 uses an unknown interface (index 3)")
        let noSource = RouteLookup.route(Route(family: UInt8(AF_INET), outputInterface: 3))
        XCTAssertEqual(verdict(table(), noSource).reason, "interface c0 has no IPv4 address")
        var blackhole = Route(family: UInt8(AF_INET), type: UInt8(RTN_BLACKHOLE), outputInterface: 3)
        XCTAssertEqual(verdict(table(), .route(blackhole)).reason, "no route to 198.18.2.2 (the route is a blackhole)")
        blackhole.type = UInt8(RTN_UNICAST)
        XCTAssertEqual(
            verdict(table(), .failed(errno: ENOMEM)).reason, "route lookup for 198.18.2.2 failed: error 12",
            "the pure rules' own words for an errno")
        let described = ReachabilityEvaluation.verdict(
            target: target, lookup: .failed(errno: ENOMEM), table: table(),
            classify: { _ in .ethernet }, describeError: { String(cString: strerror($0)) })
        XCTAssertEqual(
            described.reason, "route lookup for 198.18.2.2 failed: Cannot allocate memory", "the engine passes strerror"
        )
    }

    func testIPv6DuplicateAddressDetection() {
        let v6 = IPAddress("fd00::9")!
        let source = IPAddress("fd00::2")!
        let lookup = RouteLookup.route(Route(family: UInt8(AF_INET6), outputInterface: 3, preferredSource: source))
        let tentative = InterfaceAddress(index: 3, address: source, prefixLength: 64, flags: UInt32(IFA_F_TENTATIVE))
        XCTAssertEqual(
            verdict(table(addresses: [tentative]), lookup, target: v6).reason,
            "interface c0: address fd00::2 is still being checked for duplicates")
        let failed = InterfaceAddress(
            index: 3, address: source, prefixLength: 64, flags: UInt32(IFA_F_DADFAILED | IFA_F_TENTATIVE))
        XCTAssertEqual(
            verdict(table(addresses: [failed]), lookup, target: v6).reason,
            "interface c0: address fd00::2 is a duplicate on the network")
        let deprecated = InterfaceAddress(index: 3, address: source, prefixLength: 64, flags: UInt32(IFA_F_DEPRECATED))
        XCTAssertTrue(verdict(table(addresses: [deprecated]), lookup, target: v6).usable)
    }

    func testDefaultRouteBeforeTheHostResolves() {
        var t = table(addresses: [InterfaceAddress(index: 3, address: IPAddress("198.18.0.2")!, prefixLength: 24)])
        XCTAssertEqual(
            ReachabilityEvaluation.defaultRouteVerdict(families: [.v4], table: t) { _ in .ethernet }.reason,
            "no IPv4 default route")
        t.apply(
            .newRoute(Route(family: UInt8(AF_INET), outputInterface: 3, gateway: IPAddress("198.18.0.1")), sequence: 0))
        XCTAssertTrue(ReachabilityEvaluation.defaultRouteVerdict(families: [.v4], table: t) { _ in .ethernet }.usable)
        XCTAssertEqual(
            ReachabilityEvaluation.defaultRouteVerdict(families: [.v6], table: t) { _ in .ethernet }.reason,
            "no IPv6 default route")
        t.apply(.deleteLink(index: 3))
        XCTAssertTrue(t.defaultRoutes.isEmpty, "a deleted link takes its routes and addresses")
        XCTAssertTrue(t.addresses.isEmpty)
    }

    func testTableReportsOnlyRealChanges() {
        var t = LinkTable()
        let link = Link(index: 3, name: "c0", flags: up, type: UInt16(ARPHRD_ETHER))
        XCTAssertTrue(t.apply(.newLink(link)))
        XCTAssertFalse(t.apply(.newLink(link)))
        let address = InterfaceAddress(
            index: 3, address: IPAddress("fd00::2")!, prefixLength: 64, flags: UInt32(IFA_F_TENTATIVE))
        XCTAssertTrue(t.apply(.newAddress(address)))
        var settled = address
        settled.flags = 0
        XCTAssertTrue(t.apply(.newAddress(settled)), "flags change in place")
        XCTAssertEqual(t.addresses, [settled])
        XCTAssertTrue(t.apply(.deleteAddress(settled)))
        XCTAssertFalse(t.apply(.deleteAddress(settled)))
    }
}

final class PreviousInterfaceTests: XCTestCase {
    func testAFailedLookupNamesTheLinkThatWentDown() {
        var table = LinkTable()
        table.apply(.newLink(Link(index: 3, name: "c0", flags: 0, type: UInt16(ARPHRD_ETHER))))
        let target = IPAddress("198.18.2.2")!
        XCTAssertEqual(
            ReachabilityEvaluation.verdict(
                target: target, lookup: .failed(errno: ENETUNREACH), table: table,
                previousInterface: 3
            ) { _ in .ethernet }.reason, "interface c0 is down")
        XCTAssertEqual(
            ReachabilityEvaluation.verdict(target: target, lookup: .failed(errno: ENETUNREACH), table: table) { _ in
                .ethernet
            }.reason,
            "no route to 198.18.2.2")
    }
}
