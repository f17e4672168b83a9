@testable import Reachability
import CLinux
import Glibc
import NetAddress
import NetCore
import ReachabilityRules
import XCTest

final class NetlinkParserTests: XCTestCase {
    func testLinkWithNestedKind() {
        let result = NetlinkParser.parse(NetlinkBytes.link(index: 7, name: "veth-c0", kind: "veth"))
        XCTAssertEqual(result.malformed, 0)
        guard case .newLink(let link) = result.messages.first else { return XCTFail("\(result)") }
        XCTAssertEqual(link.index, 7)
        XCTAssertEqual(link.name, "veth-c0")
        XCTAssertEqual(link.kind, "veth")
        XCTAssertEqual(link.type, UInt16(ARPHRD_ETHER))
        XCTAssertEqual(link.operState, 6)
        XCTAssertTrue(link.isUp && link.isRunning && link.hasCarrier)
    }

    func testAddressesAndTheirFlags() {
        let v4 = NetlinkParser.parse(NetlinkBytes.address(index: 2, "198.18.0.2", prefix: 24))
        XCTAssertEqual(
            v4.messages, [.newAddress(InterfaceAddress(index: 2, address: IPAddress("198.18.0.2")!, prefixLength: 24))])
        let tentative = NetlinkParser.parse(
            NetlinkBytes.address(index: 2, "fd00::2", prefix: 64, flags: UInt32(IFA_F_TENTATIVE)))
        guard case .newAddress(let address) = tentative.messages.first else { return XCTFail("\(tentative)") }
        XCTAssertTrue(address.isTentative)
        XCTAssertFalse(address.isUsable)
        let deleted = NetlinkParser.parse(NetlinkBytes.address(index: 2, "fd00::2", prefix: 64, delete: true))
        guard case .deleteAddress = deleted.messages.first else { return XCTFail("\(deleted)") }
    }

    func testRoutes() {
        let result = NetlinkParser.parse(
            NetlinkBytes.route(
                destination: "198.18.2.0", length: 24, oif: 3, gateway: "198.18.0.1",
                source: "198.18.0.2", table: 1000, sequence: 9))
        let expected = Route(
            family: UInt8(AF_INET), table: 1000, destination: IPAddress("198.18.2.0"), destinationLength: 24,
            outputInterface: 3, gateway: IPAddress("198.18.0.1"), preferredSource: IPAddress("198.18.0.2"))
        XCTAssertEqual(result.messages, [.newRoute(expected, sequence: 9)])
        let v6default = NetlinkParser.parse(NetlinkBytes.route(family: AF_INET6, oif: 4, gateway: "fd00::1"))
        guard case .newRoute(let route, _) = v6default.messages.first else { return XCTFail("\(v6default)") }
        XCTAssertTrue(route.isDefault)
    }

    /// Issue 54 item 3: the kernel merges IPv6 default routes of equal metric through two routers into one message
    /// with RTA_MULTIPATH (as NetworkManager and networkd leave them): a route per next hop, each with its gateway.
    func testAMultipathRouteIsARoutePerNextHop() {
        let merged = NetlinkParser.parse(
            NetlinkBytes.route(
                family: AF_INET6, table: 254, sequence: 0, nextHops: [(2, "fe80::2"), (3, "fe80::1")]))
        XCTAssertEqual(merged.malformed, 0)
        XCTAssertEqual(
            merged.messages,
            [
                .newRoute(
                    Route(family: UInt8(AF_INET6), outputInterface: 2, gateway: IPAddress("fe80::2")), sequence: 0),
                .newRoute(
                    Route(family: UInt8(AF_INET6), outputInterface: 3, gateway: IPAddress("fe80::1")), sequence: 0),
            ])
        let deleted = NetlinkParser.parse(
            NetlinkBytes.route(family: AF_INET6, delete: true, nextHops: [(2, "fe80::2"), (2, "fe80::1")]))
        XCTAssertEqual(deleted.messages.count, 2)
        XCTAssertTrue(deleted.messages.allSatisfy { if case .deleteRoute = $0 { true } else { false } })
        // A hop whose length runs past the attribute, or a gateway of the wrong size, makes the message malformed.
        var lying = NetlinkBytes.multipath([(2, "fe80::2")])
        lying[0] = 200
        var truncated = NetlinkBytes.multipath([(2, "fe80::2")])
        truncated[8] = 8 // RTA_GATEWAY's length: 4 bytes of address
        for payload in [lying, truncated] {
            var body = rtmsg()
            body.rtm_family = UInt8(AF_INET6)
            body.rtm_type = UInt8(RTN_UNICAST)
            let bytes = NetlinkRequest.message(
                type: Int32(RTM_NEWROUTE), flags: 0, sequence: 0, body: body,
                attributes: [NetlinkBytes.attribute(Int32(RTA_MULTIPATH.rawValue), payload)])
            XCTAssertEqual(NetlinkParser.parse(bytes).malformed, 1)
            XCTAssertEqual(NetlinkParser.parse(bytes).messages, [])
        }
    }

    func testMultipartDumpWithDoneAndErrors() {
        let datagram =
            NetlinkBytes.link(index: 1, name: "lo", type: ARPHRD_LOOPBACK, sequence: 5)
            + NetlinkBytes.link(index: 2, name: "eth0", sequence: 5) + NetlinkBytes.done(sequence: 5)
        let result = NetlinkParser.parse(datagram)
        XCTAssertEqual(result.malformed, 0)
        XCTAssertEqual(result.messages.count, 3)
        XCTAssertEqual(result.messages.last, .done(sequence: 5))
        XCTAssertEqual(
            NetlinkParser.parse(NetlinkBytes.error(sequence: 8, errno: ENETUNREACH)).messages,
            [.error(sequence: 8, errno: ENETUNREACH)])
        XCTAssertEqual(
            NetlinkParser.parse(NetlinkBytes.error(sequence: 8, errno: 0)).messages, [.error(sequence: 8, errno: 0)])
    }

    /// A router advertisement's options: taken for IPv6 RAs only; a length past the message is malformed.
    func testRouterAdvertisementOptions() {
        let option: [UInt8] = [38, 2, 0x02, 0x58, 0x20, 0x01, 0x0d, 0xb8, 0, 0x64, 0, 0, 0, 0, 0, 0]
        XCTAssertEqual(
            NetlinkParser.parse(NetlinkBytes.routerOptions(index: 3, option)).messages,
            [.routerOptions(index: 3, options: option)])
        XCTAssertEqual(
            NetlinkParser.parse(NetlinkBytes.routerOptions(index: 3, option, family: AF_INET)).messages,
            [.ignored(type: UInt16(RTM_NEWNDUSEROPT))])
        XCTAssertEqual(
            NetlinkParser.parse(NetlinkBytes.routerOptions(index: 3, option, icmpType: 137)).messages,
            [.ignored(type: UInt16(RTM_NEWNDUSEROPT))])
        let lying = NetlinkParser.parse(NetlinkBytes.routerOptions(index: 3, option, claimedLength: 400))
        XCTAssertEqual(lying.messages, [])
        XCTAssertEqual(lying.malformed, 1)
        XCTAssertEqual(NetlinkParser.parse(NetlinkBytes.routerOptions(index: 0, option)).malformed, 1)
    }

    func testEveryTruncationIsSafeAndCounted() {
        let datagram =
            NetlinkBytes.link(index: 2, name: "eth0", kind: "veth")
            + NetlinkBytes.address(index: 2, "fd00::2", prefix: 64)
            + NetlinkBytes.route(oif: 2, gateway: "198.18.0.1") + NetlinkBytes.done(sequence: 1)
        let whole = NetlinkParser.parse(datagram)
        XCTAssertEqual(whole.messages.count, 4)
        for cut in 0..<datagram.count {
            let result = NetlinkParser.parse(datagram[..<cut])
            XCTAssertLessThan(result.messages.count, 4, "cut at \(cut)")
            XCTAssertTrue(cut == 0 || result.malformed > 0 || result.messages.count > 0, "cut at \(cut) is noticed")
        }
    }

    func testLyingLengths() {
        var message = NetlinkBytes.link(index: 2, name: "eth0")
        // nlmsg_len larger than the datagram.
        var tooLong = message
        tooLong.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(4096), as: UInt32.self) }
        XCTAssertEqual(NetlinkParser.parse(tooLong).messages, [])
        XCTAssertEqual(NetlinkParser.parse(tooLong).malformed, 1)
        // nlmsg_len smaller than the ifinfomsg it must carry.
        var tooShort = message
        tooShort.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(20), as: UInt32.self) }
        XCTAssertFalse(
            NetlinkParser.parse(tooShort).messages.contains { if case .newLink = $0 { true } else { false } })
        // An attribute whose rta_len runs past the message.
        let attributeOffset = 16 + MemoryLayout<ifinfomsg>.size
        message.withUnsafeMutableBytes {
            $0.storeBytes(of: UInt16(500), toByteOffset: attributeOffset, as: UInt16.self)
        }
        XCTAssertEqual(NetlinkParser.parse(message), NetlinkParser.Result(messages: [], malformed: 1))
    }

    func testWrongSizedValuesAreMalformed() {
        var body = rtmsg()
        body.rtm_family = UInt8(AF_INET)
        let badDestination = NetlinkRequest.message(
            type: Int32(RTM_NEWROUTE), flags: 0, sequence: 0, body: body,
            attributes: [(UInt16(RTA_DST.rawValue), [1, 2, 3])])
        XCTAssertEqual(NetlinkParser.parse(badDestination).malformed, 1)
        let longName = NetlinkBytes.link(index: 2, name: String(repeating: "x", count: 16))
        XCTAssertEqual(NetlinkParser.parse(longName).malformed, 1)
        let badOif = NetlinkRequest.message(
            type: Int32(RTM_NEWROUTE), flags: 0, sequence: 0, body: body,
            attributes: [(UInt16(RTA_OIF.rawValue), [1, 0])])
        XCTAssertEqual(NetlinkParser.parse(badOif).malformed, 1)
        var wrongFamily = rtmsg()
        wrongFamily.rtm_family = 99
        XCTAssertEqual(
            NetlinkParser.parse(
                NetlinkRequest.message(
                    type: Int32(RTM_NEWROUTE), flags: 0, sequence: 0,
                    body: wrongFamily, attributes: [])
            ).malformed, 1)
        XCTAssertEqual(NetlinkParser.parse(NetlinkBytes.link(index: 0, name: "x")).malformed, 1, "index 0 is no link")
    }

    func testRequestsRoundTripThroughTheParser() {
        let lookup = NetlinkRequest.routeLookup(to: IPAddress("fd00::9")!, sequence: 3)
        XCTAssertEqual(lookup.count % 4, 0)
        guard
            case .newRoute(let route, _)? = NetlinkParser.parse(
                lookup.enumerated().map { $0.offset == 4 ? UInt8(RTM_NEWROUTE) : $0.element }
            ).messages.first
        else {
            return XCTFail("lookup request did not parse back")
        }
        XCTAssertEqual(route.destination, IPAddress("fd00::9"))
        XCTAssertEqual(route.destinationLength, 128)
    }
}

final class ZonedAddressTests: XCTestCase {
    func testAZoneIsParsedShownAndCarriedIntoTheRouteLookup() throws {
        let zoned = try XCTUnwrap(IPAddress("fe80::1%lo"))
        XCTAssertEqual(zoned.zone, 1, "lo is interface 1")
        XCTAssertEqual(zoned.description, "fe80::1%lo")
        XCTAssertEqual(IPAddress("fe80::1%1"), zoned, "a numeric zone is the same interface")
        XCTAssertNil(IPAddress("fe80::1%nosuch0"), "a zone naming no interface is not an address here")
        XCTAssertNotEqual(IPAddress("fe80::1"), zoned)
        XCTAssertNil(IPAddress("198.18.0.1%lo"), "IPv4 has no zones")

        let plain = NetlinkRequest.routeLookup(to: try XCTUnwrap(IPAddress("fd00::2")), sequence: 1)
        let lookup = NetlinkRequest.routeLookup(to: zoned, sequence: 1)
        XCTAssertEqual(lookup.count, plain.count + 8, "one more attribute: RTA_OIF, 4 bytes of header, 4 of index")
        let oif = Array(lookup.suffix(8))
        XCTAssertEqual(oif[0..<4], [8, 0, UInt8(RTA_OIF.rawValue), 0])
        XCTAssertEqual(oif[4..<8], withUnsafeBytes(of: UInt32(1)) { Array($0) }[...])

        // The zone reaches the socket address.
        zoned.withSocketAddress { pointer, length in
            let address = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in6.self)
            XCTAssertEqual(address.sin6_scope_id, 1)
            XCTAssertEqual(IPAddress(socketAddress: UnsafeRawPointer(pointer), length: Int(length)), zoned)
        }
    }
}
