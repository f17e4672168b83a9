import Glibc
import NetAddress
import NetCore
import XCTest

/// IPAddress writes its text form itself (the pure targets do not link libc): here it is held
/// to inet_ntop(3); and the classes a CheckURL may not point into.
final class IPAddressTests: XCTestCase {
    func testTextFormIsInetNtops() {
        var random = SystemRandomNumberGenerator()
        var cases: [IPAddress] = [
            .v4([0, 0, 0, 0]), .v4([255, 255, 255, 255]), .v4([198, 18, 0, 1]),
            .v6(AddressBytes(repeating: 0, count: 16)), .v6(AddressBytes(repeating: 0xFF, count: 16)),
        ]
        for _ in 0..<200_000 {
            var bytes = [UInt8](repeating: 0, count: 16)
            for group in 0..<8 where Int.random(in: 0..<3, using: &random) == 0 {
                bytes[2 * group] = Bool.random(using: &random) ? UInt8.random(in: 0...255, using: &random) : 0
                bytes[2 * group + 1] = UInt8.random(in: 0...255, using: &random)
            }
            switch Int.random(in: 0..<8, using: &random) {
            case 0: bytes.replaceSubrange(0..<12, with: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
            case 1: bytes.replaceSubrange(0..<12, with: [UInt8](repeating: 0, count: 12))
            default: break
            }
            cases.append(.v6(AddressBytes(bytes)))
            cases.append(.v4(AddressBytes(bytes[12..<16])))
        }
        for address in cases {
            XCTAssertEqual(address.description, inetNtop(address), "\(address.bytes)")
        }
    }

    func testAZoneShowsItsNameOrIndex() {
        XCTAssertEqual(
            IPAddress.v6([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1], zone: .init(index: 7)).description,
            "fe80::1%7")
        XCTAssertEqual(IPAddress("fe80::1%1")?.description, "fe80::1%lo", "NetCore names an index it reads")
        XCTAssertEqual(
            IPAddress.v6([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1], zone: .init(index: 1)).namingZone()
                .description,
            "fe80::1%lo")
    }

    private func inetNtop(_ address: IPAddress) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = Array(address.bytes).withUnsafeBytes {
            inet_ntop(address.family, $0.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard ok != nil else { return "inet_ntop failed" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func testWhatPointsInward() {
        for inward in [
            "127.0.0.1", "0.0.0.0", "169.254.1.1", "224.0.0.1", "::1", "::", "fe80::1", "ff02::1", "::ffff:127.0.0.1",
        ] {
            XCTAssertEqual(IPAddress(inward)?.pointsInward, true, inward)
        }
        for outward in ["198.18.0.1", "10.0.0.1", "2001:db8::1", "fd00::1", "::ffff:198.18.0.1"] {
            XCTAssertEqual(IPAddress(outward)?.pointsInward, false, outward)
        }
    }

    func testAnIPv4MappedAddressIsTheIPv4AddressItCarries() {
        XCTAssertEqual(IPAddress("::ffff:198.18.0.1")?.unmapped, IPAddress("198.18.0.1"))
        XCTAssertEqual(IPAddress("2001:db8::1")?.unmapped, IPAddress("2001:db8::1"))
        XCTAssertEqual(IPAddress("198.18.0.1")?.unmapped, IPAddress("198.18.0.1"))
    }

    func testAFamilyIsTheKernelsNumberOnlyAtTheEdge() {
        XCTAssertEqual(IPFamily.v4.number, AF_INET)
        XCTAssertEqual(IPFamily.v6.number, AF_INET6)
        XCTAssertEqual(IPFamily(number: UInt8(AF_INET6)), .v6)
        XCTAssertNil(IPFamily(number: AF_UNSPEC))
        XCTAssertNil(IPFamily(number: 7))
        XCTAssertEqual(IPAddress("198.18.0.1")?.ipFamily, .v4)
        XCTAssertEqual(IPAddress("::ffff:198.18.0.1")?.ipFamily, .v6, "a mapped address is sent as IPv6")
        XCTAssertEqual(IPFamily.allCases.map(\.description), ["IPv4", "IPv6"])
    }
}
