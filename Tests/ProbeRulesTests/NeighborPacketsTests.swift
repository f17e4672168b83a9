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
        let request = try XCTUnwrap(
            NeighborPackets.arpRequest(senderHardware: ours, sender: source, targetHardware: theirs, target: gateway))
        XCTAssertEqual(request.count, 28)
        XCTAssertEqual(Array(request[0..<8]), [0, 1, 8, 0, 6, 4, 0, 1])
        XCTAssertEqual(Array(request[8..<14]), ours)
        XCTAssertEqual(Array(request[14..<18]), Array(source.bytes))
        XCTAssertEqual(Array(request[18..<24]), theirs)
        XCTAssertEqual(Array(request[24..<28]), Array(gateway.bytes))
        XCTAssertNil(
            NeighborPackets.arpRequest(senderHardware: [1, 2], sender: source, targetHardware: theirs, target: gateway))
        XCTAssertNil(
            NeighborPackets.arpRequest(
                senderHardware: ours, sender: source, targetHardware: theirs,
                target: .v6(AddressBytes(Array(repeating: 0, count: 16)))))
    }

    func reply(from sender: IPAddress, op: UInt8 = 2) -> [UInt8] {
        [0, 1, 8, 0, 6, 4, 0, op] + theirs + sender.bytes + ours + source.bytes
    }

    func isReply(_ bytes: [UInt8], known: [UInt8]? = nil) -> Bool {
        NeighborPackets.isArpReply(bytes, from: gateway, gatewayHardware: known, to: ours, source)
    }

    func testOnlyAReplyFromTheGatewaysAddressCounts() {
        XCTAssertTrue(isReply(reply(from: gateway)))
        XCTAssertFalse(isReply(reply(from: .v4([198, 18, 0, 99]))), "another host's reply")
        XCTAssertFalse(isReply(reply(from: gateway, op: 1)), "a request is no answer")
        XCTAssertFalse(isReply(Array(reply(from: gateway).prefix(20))), "truncated")
        var otherProtocol = reply(from: gateway)
        otherProtocol[2] = 0x86
        XCTAssertFalse(isReply(otherProtocol))
        XCTAssertFalse(isReply([]))
    }

    /// Issue 45 N27: opcode and sender are not enough — the reply must be to us, and carry the link-layer
    /// address the request went to when one was known.
    func testAReplyMustBeToUsAndFromTheKnownLinkLayerAddress() {
        XCTAssertTrue(isReply(reply(from: gateway), known: theirs))
        XCTAssertTrue(
            isReply(reply(from: gateway), known: NeighborPackets.broadcast), "asked by broadcast: any hardware")
        XCTAssertFalse(
            isReply(reply(from: gateway), known: [0x02, 0, 0, 0, 0, 0x66]), "another card claiming the gateway")
        var toSomeoneElse = reply(from: gateway)
        toSomeoneElse.replaceSubrange(18..<24, with: [0x02, 0, 0, 0, 0, 0x77])
        XCTAssertFalse(isReply(toSomeoneElse), "a reply to another host's request")
        var toAnotherAddress = reply(from: gateway)
        toAnotherAddress.replaceSubrange(24..<28, with: [198, 18, 0, 77])
        XCTAssertFalse(isReply(toAnotherAddress), "a reply for another address of the link")
    }

    func testTheSolicitationAndTheAdvertisementForTheGateway() throws {
        let v6 = IPAddress.v6([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
        let solicitation = try XCTUnwrap(NeighborPackets.solicitation(target: v6, sourceHardware: ours))
        XCTAssertEqual(solicitation[0], 135)
        XCTAssertEqual(Array(solicitation[8..<24]), Array(v6.bytes))
        XCTAssertEqual(Array(solicitation[24...]), [1, 1] + ours, "our link-layer address as an option")
        XCTAssertEqual(try XCTUnwrap(NeighborPackets.solicitation(target: v6, sourceHardware: nil)).count, 24)
        let advertisement: [UInt8] = [136, 0, 0, 0, 0x60, 0, 0, 0] + v6.bytes + [2, 1] + theirs
        XCTAssertTrue(NeighborPackets.isAdvertisement(advertisement, for: v6, hopLimit: 255))
        XCTAssertFalse(
            NeighborPackets.isAdvertisement(advertisement, for: v6, hopLimit: 64), "forwarded: from off the link")
        XCTAssertFalse(NeighborPackets.isAdvertisement(advertisement, for: v6, hopLimit: nil), "hop limit unknown")
        XCTAssertFalse(NeighborPackets.isAdvertisement(Array(advertisement.prefix(20)), for: v6, hopLimit: 255))
        var other = advertisement
        other[23] = 2
        XCTAssertFalse(NeighborPackets.isAdvertisement(other, for: v6, hopLimit: 255), "for another target")
        var solicitationBack = advertisement
        solicitationBack[0] = 135
        XCTAssertFalse(NeighborPackets.isAdvertisement(solicitationBack, for: v6, hopLimit: 255))
    }
}
