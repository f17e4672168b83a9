import CLinux
import Glibc
import NetAddress
import NetCore
import ReachabilityRules
import XCTest

/// The pure targets write the kernel's numbers and an address's text form themselves;
/// here they are held to the C headers and to inet_ntop(3).
final class PureRulesAgainstTheSystemTests: XCTestCase {
    func testKernelNumbersAreTheHeaders() {
        XCTAssertEqual(IPAddress.familyIPv4, AF_INET)
        XCTAssertEqual(IPAddress.familyIPv6, AF_INET6)
        XCTAssertEqual(KernelNumbers.linkUp, UInt32(IFF_UP.rawValue))
        XCTAssertEqual(KernelNumbers.linkRunning, UInt32(IFF_RUNNING.rawValue))
        XCTAssertEqual(KernelNumbers.linkLowerUp, UInt32(IFF_LOWER_UP.rawValue))
        XCTAssertEqual(KernelNumbers.addressDuplicate, UInt32(IFA_F_DADFAILED))
        XCTAssertEqual(KernelNumbers.addressDeprecated, UInt32(IFA_F_DEPRECATED))
        XCTAssertEqual(KernelNumbers.addressTentative, UInt32(IFA_F_TENTATIVE))
        XCTAssertEqual(KernelNumbers.mainTable, UInt32(RT_TABLE_MAIN.rawValue))
        XCTAssertEqual(KernelNumbers.routeUnicast, UInt8(RTN_UNICAST))
        XCTAssertEqual(KernelNumbers.routeLocal, UInt8(RTN_LOCAL))
        XCTAssertEqual(KernelNumbers.routeBlackhole, UInt8(RTN_BLACKHOLE))
        XCTAssertEqual(KernelNumbers.routeUnreachable, UInt8(RTN_UNREACHABLE))
        XCTAssertEqual(KernelNumbers.routeProhibit, UInt8(RTN_PROHIBIT))
        XCTAssertEqual(KernelNumbers.routeThrow, UInt8(RTN_THROW))
        XCTAssertEqual(KernelNumbers.errorAccess, EACCES)
        XCTAssertEqual(KernelNumbers.errorInvalid, EINVAL)
        XCTAssertEqual(KernelNumbers.errorNetworkUnreachable, ENETUNREACH)
        XCTAssertEqual(KernelNumbers.errorHostUnreachable, EHOSTUNREACH)
    }

    /// Random addresses whose groups are often zero (so every run length and position of `::`
    /// occurs), the IPv4-mapped and -compatible forms, and all of IPv4's edges.
    func testTextFormIsInetNtops() {
        var random = SystemRandomNumberGenerator()
        var cases: [IPAddress] = [.v4([0, 0, 0, 0]), .v4([255, 255, 255, 255]), .v4([198, 18, 0, 1]),
                                  .v6([UInt8](repeating: 0, count: 16)), .v6([UInt8](repeating: 0xFF, count: 16))]
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
            cases.append(.v6(bytes))
            cases.append(.v4(Array(bytes[12..<16])))
        }
        for address in cases {
            XCTAssertEqual(address.description, inetNtop(address), "\(address.bytes)")
        }
    }

    func testAZoneShowsItsNameOrIndex() {
        XCTAssertEqual(IPAddress.v6([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1], zone: .init(index: 7)).description,
                       "fe80::1%7")
        XCTAssertEqual(IPAddress("fe80::1%1")?.description, "fe80::1%lo", "NetCore names an index it reads")
        XCTAssertEqual(IPAddress.v6([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1], zone: .init(index: 1)).namingZone().description,
                       "fe80::1%lo")
    }

    private func inetNtop(_ address: IPAddress) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = address.bytes.withUnsafeBytes { inet_ntop(address.family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard ok != nil else { return "inet_ntop failed" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
