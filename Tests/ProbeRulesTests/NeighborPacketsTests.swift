import NetAddress
import ProbeRules
import XCTest

/// The neighbour check's packets: what goes out, and which answers count.
final class NeighborPacketsTests: XCTestCase {
    let ours: [UInt8] = [0x02, 0, 0, 0, 0, 0x01]
    let theirs: [UInt8] = [0x02, 0, 0, 0, 0, 0xfe]
    let gateway = IPAddress.v4([198, 18, 0, 1])
    let source = IPAddress.v4([198, 18, 0, 2])

    func testTheARPRequestAsksForTheGatewayOnly() throws {
        let request = try XCTUnwrap(NeighborPackets.arpRequest(senderHardware: ours, sender: source, targetHardware: theirs, target: gateway))
        XCTAssertEqual(request.count, 28)
        XCTAssertEqual(Array(request[0..<8]), [0, 1, 8, 0, 6, 4, 0, 1])
        XCTAssertEqual(Array(request[8..<14]), ours)
        XCTAssertEqual(Array(request[14..<18]), Array(source.bytes))
        XCTAssertEqual(Array(request[18..<24]), theirs)
        XCTAssertEqual(Array(request[24..<28]), Array(gateway.bytes))
        XCTAssertNil(NeighborPackets.arpRequest(senderHardware: [1, 2], sender: source, targetHardware: theirs, target: gateway))
        XCTAssertNil(NeighborPackets.arpRequest(senderHardware: ours, sender: source, targetHardware: theirs, target: .v6(AddressBytes(Array(repeating: 0, count: 16)))))
    }

    func reply(from sender: IPAddress, op: UInt8 = 2) -> [UInt8] {
        [0, 1, 8, 0, 6, 4, 0, op] + theirs + sender.bytes + ours + source.bytes
    }

    func testOnlyAReplyFromTheGatewaysAddressCounts() {
        XCTAssertTrue(NeighborPackets.isArpReply(reply(from: gateway), from: gateway))
        XCTAssertFalse(NeighborPackets.isArpReply(reply(from: .v4([198, 18, 0, 99])), from: gateway), "another host's reply")
        XCTAssertFalse(NeighborPackets.isArpReply(reply(from: gateway, op: 1), from: gateway), "a request is no answer")
        XCTAssertFalse(NeighborPackets.isArpReply(Array(reply(from: gateway).prefix(20)), from: gateway), "truncated")
        var otherProtocol = reply(from: gateway)
        otherProtocol[2] = 0x86
        XCTAssertFalse(NeighborPackets.isArpReply(otherProtocol, from: gateway))
        XCTAssertFalse(NeighborPackets.isArpReply([], from: gateway))
    }

    func testTheSolicitationAndTheAdvertisementForTheGateway() throws {
        let v6 = IPAddress.v6([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
        let solicitation = try XCTUnwrap(NeighborPackets.solicitation(target: v6, sourceHardware: ours))
        XCTAssertEqual(solicitation[0], 135)
        XCTAssertEqual(Array(solicitation[8..<24]), Array(v6.bytes))
        XCTAssertEqual(Array(solicitation[24...]), [1, 1] + ours, "our link-layer address as an option")
        XCTAssertEqual(try XCTUnwrap(NeighborPackets.solicitation(target: v6, sourceHardware: nil)).count, 24)
        let advertisement: [UInt8] = [136, 0, 0, 0, 0x60, 0, 0, 0] + v6.bytes + [2, 1] + theirs
        XCTAssertTrue(NeighborPackets.isAdvertisement(advertisement, for: v6))
        XCTAssertFalse(NeighborPackets.isAdvertisement(Array(advertisement.prefix(20)), for: v6))
        var other = advertisement
        other[23] = 2
        XCTAssertFalse(NeighborPackets.isAdvertisement(other, for: v6), "for another target")
        var solicitationBack = advertisement
        solicitationBack[0] = 135
        XCTAssertFalse(NeighborPackets.isAdvertisement(solicitationBack, for: v6))
    }
}
