import CLinux
import Glibc
import NetAddress
import ReachabilityRules
import XCTest

/// The pure rules write the kernel's numbers themselves; here they are held to the C headers.
final class KernelNumbersTests: XCTestCase {
    func testKernelNumbersAreTheHeaders() {
        XCTAssertEqual(IPAddress.familyIPv4, AF_INET)
        XCTAssertEqual(IPAddress.familyIPv6, AF_INET6)
        XCTAssertEqual(KernelNumbers.linkUp, UInt32(IFF_UP.rawValue))
        XCTAssertEqual(KernelNumbers.linkRunning, UInt32(IFF_RUNNING.rawValue))
        XCTAssertEqual(KernelNumbers.linkLowerUp, UInt32(IFF_LOWER_UP.rawValue))
        XCTAssertEqual(KernelNumbers.linkPointToPoint, UInt32(IFF_POINTOPOINT.rawValue))
        XCTAssertEqual(KernelNumbers.linkNoArp, UInt32(IFF_NOARP.rawValue))
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
}
