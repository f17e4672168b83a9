import CLinux
import Glibc
import NetAddress
import ReachabilityRules
import XCTest

/// The neighbour table read for the next hop's link-layer address: the request, and the one entry
/// that counts in a dump.
final class NeighborDumpTests: XCTestCase {
    let gateway = IPAddress.v4([198, 18, 0, 1])
    let mac: [UInt8] = [2, 0, 0, 0, 0, 0xfe]

    func message(
        type: UInt16 = 28, index: Int32 = 3, state: UInt16 = 0x02, destination: [UInt8], link: [UInt8]?
    ) -> [UInt8] {
        var attributes: [UInt8] = []
        func attribute(_ kind: UInt16, _ value: [UInt8]) {
            withUnsafeBytes(of: UInt16(4 + value.count)) { attributes += $0 }
            withUnsafeBytes(of: kind) { attributes += $0 }
            attributes += value
            while attributes.count % 4 != 0 { attributes.append(0) }
        }
        attribute(1, destination)
        if let link { attribute(2, link) }
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt32(28 + attributes.count)) { bytes += $0 }
        withUnsafeBytes(of: type) { bytes += $0 }
        bytes += [2, 0]
        withUnsafeBytes(of: UInt32(1)) { bytes += $0 }
        withUnsafeBytes(of: UInt32(0)) { bytes += $0 }
        bytes += [UInt8(AF_INET), 0, 0, 0]
        withUnsafeBytes(of: index) { bytes += $0 }
        withUnsafeBytes(of: state) { bytes += $0 }
        bytes += [0, 1]
        return bytes + attributes
    }

    var doneMessage: [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt32(20)) { bytes += $0 }
        withUnsafeBytes(of: UInt16(3)) { bytes += $0 }
        bytes += [2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        return bytes
    }

    func testTheRequestIsADumpOfTheFamilysNeighbours() {
        let request = NeighborDump.request(family: AF_INET, sequence: 7)
        XCTAssertEqual(request.count, 28)
        XCTAssertEqual(
            request.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt16.self) }, UInt16(RTM_GETNEIGH))
        XCTAssertEqual(
            request.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 6, as: UInt16.self) },
            UInt16(NLM_F_REQUEST | NLM_F_DUMP))
        XCTAssertEqual(request[16], UInt8(AF_INET))
    }

    func testOnlyTheGatewaysEntryOnItsInterfaceCounts() {
        let dump =
            message(destination: [198, 18, 0, 7], link: [2, 0, 0, 0, 0, 7])
            + message(index: 4, destination: Array(gateway.bytes), link: [9, 9, 9, 9, 9, 9])
            + message(destination: Array(gateway.bytes), link: mac) + doneMessage
        let (found, ended) = NeighborDump.hardwareAddress(of: gateway, interfaceIndex: 3, in: dump)
        XCTAssertEqual(found, mac)
        XCTAssertTrue(ended)
        let partial = NeighborDump.hardwareAddress(
            of: gateway, interfaceIndex: 3, in: message(destination: Array(gateway.bytes), link: mac))
        XCTAssertEqual(partial.address, mac)
        XCTAssertFalse(partial.ended, "more parts may follow")
    }

    func testAnEntryBeingResolvedOrFailedOrWithoutAddressGivesNone() {
        XCTAssertNil(
            NeighborDump.hardwareAddress(
                of: gateway, interfaceIndex: 3, in: message(state: 0x01, destination: Array(gateway.bytes), link: mac)
            ).address)
        XCTAssertNil(
            NeighborDump.hardwareAddress(
                of: gateway, interfaceIndex: 3, in: message(state: 0x20, destination: Array(gateway.bytes), link: mac)
            ).address)
        XCTAssertNil(
            NeighborDump.hardwareAddress(
                of: gateway, interfaceIndex: 3, in: message(destination: Array(gateway.bytes), link: nil)
            ).address)
        XCTAssertNil(
            NeighborDump.hardwareAddress(
                of: gateway, interfaceIndex: 3, in: message(destination: Array(gateway.bytes), link: [1, 2])
            ).address)
    }

    func testTruncatedOrLyingLengthsAreNeverReadPast() {
        let whole = message(destination: Array(gateway.bytes), link: mac)
        for cut in 0..<whole.count {
            _ = NeighborDump.hardwareAddress(of: gateway, interfaceIndex: 3, in: Array(whole.prefix(cut)))
        }
        var lying = whole
        lying[0] = 0xff
        XCTAssertNil(NeighborDump.hardwareAddress(of: gateway, interfaceIndex: 3, in: lying).address)
        var attributeLying = whole
        attributeLying[28] = 0xff
        XCTAssertNil(NeighborDump.hardwareAddress(of: gateway, interfaceIndex: 3, in: attributeLying).address)
    }
}
