import Glibc
import ProbeRules
import XCTest

final class EchoPacketTests: XCTestCase {
    let token: UInt64 = 0x0123_4567_89AB_CDEF

    /// An IPv4 header (optionally with options) carrying `payload`.
    func ipv4(
        _ payload: [UInt8], protocol proto: UInt8 = 1, options: Int = 0, destination: [UInt8] = [198, 18, 2, 2]
    ) -> [UInt8] {
        let ihl = 5 + options / 4
        var header: [UInt8] = [UInt8(0x40 | ihl), 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0, 198, 18, 0, 2] + destination
        header += [UInt8](repeating: 1, count: options)
        return header + payload
    }

    func reply(
        _ family: EchoPacket.Family, identifier: UInt16 = 0x1234, sequence: UInt16 = 7, token: UInt64? = nil
    ) -> [UInt8] {
        var packet = EchoPacket.request(
            family: family, identifier: identifier, sequence: sequence, token: token ?? self.token)
        packet[0] = family == .v4 ? 0 : 129
        if family == .v4 {
            packet[2] = 0
            packet[3] = 0
            let checksum = InternetChecksum.compute(packet)
            packet[2] = UInt8(checksum >> 8)
            packet[3] = UInt8(checksum & 0xFF)
        }
        return packet
    }

    func testChecksumMatchesRFC1071() {
        XCTAssertEqual(InternetChecksum.compute([0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7]), 0x220D)
        XCTAssertEqual(InternetChecksum.compute([0xFF]), 0x00FF, "odd length pads with zero")
        let request = EchoPacket.request(family: .v4, identifier: 1, sequence: 2, token: token)
        XCTAssertTrue(InternetChecksum.isValid(request))
    }

    func testRequestLayout() {
        let v4 = EchoPacket.request(family: .v4, identifier: 0xABCD, sequence: 0x0102, token: token)
        XCTAssertEqual(v4.count, 8 + EchoPacket.payloadLength)
        XCTAssertEqual(Array(v4[0..<2]), [8, 0])
        XCTAssertEqual(Array(v4[4..<8]), [0xAB, 0xCD, 0x01, 0x02])
        let v6 = EchoPacket.request(family: .v6, identifier: 1, sequence: 2, token: token)
        XCTAssertEqual(v6[0], 128)
        XCTAssertEqual(Array(v6[2..<4]), [0, 0], "the kernel fills the ICMPv6 checksum")
    }

    func testRepliesOnEverySocketKind() {
        let expected = EchoPacket.Parsed.reply(identifier: 0x1234, sequence: 7, token: token)
        XCTAssertEqual(EchoPacket.parse(reply(.v4), family: .v4, includesIPHeader: false), expected, "datagram IPv4")
        XCTAssertEqual(EchoPacket.parse(ipv4(reply(.v4)), family: .v4, includesIPHeader: true), expected, "raw IPv4")
        XCTAssertEqual(
            EchoPacket.parse(ipv4(reply(.v4), options: 8), family: .v4, includesIPHeader: true), expected,
            "raw IPv4 with options: skipped by the real IHL")
        XCTAssertEqual(EchoPacket.parse(reply(.v6), family: .v6, includesIPHeader: false), expected, "IPv6")
    }

    func testWhatIsNotOursIsIgnored() {
        var badChecksum = reply(.v4)
        badChecksum[10] ^= 0xFF
        XCTAssertIgnored(EchoPacket.parse(badChecksum, family: .v4, includesIPHeader: false))
        XCTAssertIgnored(
            EchoPacket.parse(
                EchoPacket.request(family: .v4, identifier: 1, sequence: 1, token: 1),
                family: .v4, includesIPHeader: false), "our own request looped back")
        var foreignPayload = reply(.v6)
        foreignPayload[9] = UInt8(ascii: "X")
        XCTAssertIgnored(EchoPacket.parse(foreignPayload, family: .v6, includesIPHeader: false))
        XCTAssertIgnored(
            EchoPacket.parse(Array(reply(.v6).prefix(12)), family: .v6, includesIPHeader: false), "truncated payload")
        XCTAssertIgnored(
            EchoPacket.parse(ipv4(reply(.v4), protocol: 6), family: .v4, includesIPHeader: true), "not ICMP")
        var lyingIHL = ipv4(reply(.v4))
        lyingIHL[0] = 0x4F
        XCTAssertIgnored(EchoPacket.parse(Array(lyingIHL.prefix(40)), family: .v4, includesIPHeader: true))
        lyingIHL[0] = 0x43
        XCTAssertIgnored(EchoPacket.parse(lyingIHL, family: .v4, includesIPHeader: true), "IHL below 5")
        for cut in 0..<24 {
            XCTAssertIgnored(
                EchoPacket.parse(Array(reply(.v4).prefix(cut)), family: .v4, includesIPHeader: false), "cut \(cut)")
        }
    }

    func testErrorsThatQuoteOurEcho() {
        let request = EchoPacket.request(family: .v4, identifier: 0x1234, sequence: 9, token: token)
        func icmpError(type: UInt8, code: UInt8, quoting quoted: [UInt8]) -> [UInt8] {
            var packet: [UInt8] = [type, code, 0, 0, 0, 0, 0, 0] + quoted
            let checksum = InternetChecksum.compute(packet)
            packet[2] = UInt8(checksum >> 8)
            packet[3] = UInt8(checksum & 0xFF)
            return packet
        }
        let unreachable = icmpError(type: 3, code: 13, quoting: ipv4(request))
        XCTAssertEqual(
            EchoPacket.parse(ipv4(unreachable), family: .v4, includesIPHeader: true),
            .error(
                .unreachable(code: 13), identifier: 0x1234, sequence: 9, token: token,
                originalDestination: [198, 18, 2, 2]))
        // RFC 792 routers quote only 8 bytes of the original datagram.
        let short = icmpError(type: 11, code: 0, quoting: ipv4(Array(request.prefix(8))))
        XCTAssertEqual(
            EchoPacket.parse(short, family: .v4, includesIPHeader: false),
            .error(.timeExceeded, identifier: 0x1234, sequence: 9, token: nil, originalDestination: [198, 18, 2, 2]))
        // Someone else's: a TCP segment, or an echo with another payload.
        XCTAssertIgnored(
            EchoPacket.parse(
                icmpError(type: 3, code: 1, quoting: ipv4([UInt8](repeating: 0, count: 20), protocol: 6)),
                family: .v4, includesIPHeader: false))
        var otherPayload = request
        otherPayload[8] = UInt8(ascii: "P")
        XCTAssertIgnored(
            EchoPacket.parse(
                icmpError(type: 3, code: 1, quoting: ipv4(otherPayload)), family: .v4, includesIPHeader: false))

        let v6request = EchoPacket.request(family: .v6, identifier: 5, sequence: 6, token: token)
        var v6header = [UInt8](repeating: 0, count: 40)
        v6header[0] = 0x60
        v6header[6] = 58
        v6header[24] = 0xFD
        let v6error: [UInt8] = [1, 3, 0, 0, 0, 0, 0, 0] + v6header + v6request
        guard
            case .error(.unreachable(code: 3), 5, 6, token, let destination) = EchoPacket.parse(
                v6error, family: .v6, includesIPHeader: false)
        else {
            return XCTFail("IPv6 unreachable not recognised")
        }
        XCTAssertEqual(destination.first, 0xFD)
        XCTAssertEqual(destination.count, 16)
    }

    func testSequenceDistanceWraps() {
        XCTAssertEqual(SequenceNumber.distance(from: 65535, to: 0), 1)
        XCTAssertEqual(SequenceNumber.distance(from: 0, to: 65535), -1)
        XCTAssertEqual(SequenceNumber.distance(from: 100, to: 90), -10)
        XCTAssertEqual(SequenceNumber.distance(from: 65530, to: 4), 10)
    }

    private func XCTAssertIgnored(
        _ parsed: EchoPacket.Parsed, _ message: String = "", file: StaticString = #filePath, line: UInt = #line
    ) {
        if case .ignored = parsed { return }
        XCTFail("expected ignored, got \(parsed) \(message)", file: file, line: line)
    }
}

/// The ICMP error table and the transient send errors: rules both the parser and the error queue use.
final class ProbeErrorRulesTests: XCTestCase {
    func testTheICMPErrorTable() {
        XCTAssertEqual(EchoPacket.Failure(family: .v4, type: 3, code: 1), .unreachable(code: 1))
        XCTAssertEqual(EchoPacket.Failure(family: .v6, type: 1, code: 4), .unreachable(code: 4))
        XCTAssertEqual(EchoPacket.Failure(family: .v4, type: 11, code: 0), .timeExceeded)
        XCTAssertEqual(EchoPacket.Failure(family: .v6, type: 3, code: 0), .timeExceeded)
        XCTAssertNil(EchoPacket.Failure(family: .v4, type: 1, code: 0), "IPv4 type 1 is unassigned")
        XCTAssertNil(EchoPacket.Failure(family: .v6, type: 4, code: 0), "a Parameter Problem is no verdict")
    }

    func testOnlyAFullBufferOrAnInterruptionIsATransientSendFailure() {
        for code in [EAGAIN, ENOBUFS, EINTR] {
            XCTAssertEqual(
                ProbeInput.failedSend(sequence: 1, errno: code, reason: ""),
                .sendFailed(sequence: 1, transient: true, reason: ""))
        }
        for code in [ENETUNREACH, EHOSTUNREACH, EPERM, EACCES] {
            XCTAssertEqual(
                ProbeInput.failedSend(sequence: 1, errno: code, reason: ""),
                .sendFailed(sequence: 1, transient: false, reason: ""))
        }
    }
}
