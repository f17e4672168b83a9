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

    /// The parser walks rtnetlink by offset; its sizes, message and attribute types are the headers'.
    func testNetlinkLayoutIsTheHeaders() {
        XCTAssertEqual(NetlinkLayout.headerSize, MemoryLayout<nlmsghdr>.size)
        XCTAssertEqual(NetlinkLayout.attributeHeaderSize, MemoryLayout<rtattr>.size)
        XCTAssertEqual(NetlinkLayout.attributeTypeMask, CLinux_NLA_TYPE_MASK)
        XCTAssertEqual(NetlinkLayout.linkInfoSize, MemoryLayout<ifinfomsg>.size)
        XCTAssertEqual(NetlinkLayout.addressInfoSize, MemoryLayout<ifaddrmsg>.size)
        XCTAssertEqual(NetlinkLayout.routeInfoSize, MemoryLayout<rtmsg>.size)
        XCTAssertEqual(NetlinkLayout.userOptionSize, MemoryLayout<nduseroptmsg>.size)
        XCTAssertEqual(NetlinkLayout.interfaceNameSize, Int(Glibc.IFNAMSIZ))
        XCTAssertEqual(Int32(NetlinkLayout.error), NLMSG_ERROR)
        XCTAssertEqual(Int32(NetlinkLayout.done), NLMSG_DONE)
        XCTAssertEqual(Int(NetlinkLayout.newLink), Int(RTM_NEWLINK))
        XCTAssertEqual(Int(NetlinkLayout.deleteLink), Int(RTM_DELLINK))
        XCTAssertEqual(Int(NetlinkLayout.newAddress), Int(RTM_NEWADDR))
        XCTAssertEqual(Int(NetlinkLayout.deleteAddress), Int(RTM_DELADDR))
        XCTAssertEqual(Int(NetlinkLayout.newRoute), Int(RTM_NEWROUTE))
        XCTAssertEqual(Int(NetlinkLayout.deleteRoute), Int(RTM_DELROUTE))
        XCTAssertEqual(Int(NetlinkLayout.newUserOption), Int(RTM_NEWNDUSEROPT))
        XCTAssertEqual(Int(NetlinkLayout.linkName), Int(IFLA_IFNAME))
        XCTAssertEqual(Int(NetlinkLayout.linkOperState), Int(IFLA_OPERSTATE))
        XCTAssertEqual(Int(NetlinkLayout.linkInfo), Int(IFLA_LINKINFO))
        XCTAssertEqual(Int(NetlinkLayout.linkInfoKind), Int(IFLA_INFO_KIND))
        XCTAssertEqual(Int(NetlinkLayout.addressAddress), Int(IFA_ADDRESS))
        XCTAssertEqual(Int(NetlinkLayout.addressLocal), Int(IFA_LOCAL))
        XCTAssertEqual(Int(NetlinkLayout.addressFlags), Int(IFA_FLAGS))
        XCTAssertEqual(Int(NetlinkLayout.routeDestination), Int(RTA_DST.rawValue))
        XCTAssertEqual(Int(NetlinkLayout.routeOutputInterface), Int(RTA_OIF.rawValue))
        XCTAssertEqual(Int(NetlinkLayout.routeGateway), Int(RTA_GATEWAY.rawValue))
        XCTAssertEqual(Int(NetlinkLayout.routePriority), Int(RTA_PRIORITY.rawValue))
        XCTAssertEqual(Int(NetlinkLayout.routePreferredSource), Int(RTA_PREFSRC.rawValue))
        XCTAssertEqual(Int(NetlinkLayout.routeTable), Int(RTA_TABLE.rawValue))
        XCTAssertEqual(Int(NetlinkLayout.routeMultipath), Int(RTA_MULTIPATH.rawValue))
        XCTAssertEqual(NetlinkLayout.nextHopSize, MemoryLayout<rtnexthop>.size)
        XCTAssertEqual(MemoryLayout<rtnexthop>.offset(of: \.rtnh_ifindex), 4)
        // Where the parser reads the fixed parts' fields.
        XCTAssertEqual(MemoryLayout<ifinfomsg>.offset(of: \.ifi_type), 2)
        XCTAssertEqual(MemoryLayout<ifinfomsg>.offset(of: \.ifi_index), 4)
        XCTAssertEqual(MemoryLayout<ifinfomsg>.offset(of: \.ifi_flags), 8)
        XCTAssertEqual(MemoryLayout<ifaddrmsg>.offset(of: \.ifa_prefixlen), 1)
        XCTAssertEqual(MemoryLayout<ifaddrmsg>.offset(of: \.ifa_flags), 2)
        XCTAssertEqual(MemoryLayout<ifaddrmsg>.offset(of: \.ifa_scope), 3)
        XCTAssertEqual(MemoryLayout<ifaddrmsg>.offset(of: \.ifa_index), 4)
        XCTAssertEqual(MemoryLayout<rtmsg>.offset(of: \.rtm_dst_len), 1)
        XCTAssertEqual(MemoryLayout<rtmsg>.offset(of: \.rtm_table), 4)
        XCTAssertEqual(MemoryLayout<rtmsg>.offset(of: \.rtm_type), 7)
        XCTAssertEqual(MemoryLayout<nduseroptmsg>.offset(of: \.nduseropt_opts_len), 2)
        XCTAssertEqual(MemoryLayout<nduseroptmsg>.offset(of: \.nduseropt_ifindex), 4)
        XCTAssertEqual(MemoryLayout<nduseroptmsg>.offset(of: \.nduseropt_icmp_type), 8)
        XCTAssertEqual(MemoryLayout<nlmsghdr>.offset(of: \.nlmsg_type), 4)
        XCTAssertEqual(MemoryLayout<nlmsghdr>.offset(of: \.nlmsg_seq), 8)
    }

    /// The sock_diag reply is read by offset too.
    func testSocketDiagLayoutIsTheHeaders() {
        XCTAssertEqual(SocketDiagLayout.byFamily, CLinux_SOCK_DIAG_BY_FAMILY)
        XCTAssertEqual(SocketDiagLayout.tcpGetSocket, CLinux_TCPDIAG_GETSOCK)
        XCTAssertEqual(SocketDiagLayout.info, CLinux_INET_DIAG_INFO)
        XCTAssertEqual(SocketDiagLayout.messageSize, MemoryLayout<inet_diag_msg>.size)
        XCTAssertEqual(SocketDiagLayout.sourceOffset, MemoryLayout<inet_diag_msg>.offset(of: \.id.idiag_src))
        XCTAssertEqual(SocketDiagLayout.destinationOffset, MemoryLayout<inet_diag_msg>.offset(of: \.id.idiag_dst))
        XCTAssertEqual(MemoryLayout<inet_diag_msg>.offset(of: \.idiag_family), 0)
        let tcpInfo = withUnsafeBytes(of: CLinux_tcp_info_offsets) { Array($0.bindMemory(to: UInt.self)) }
        XCTAssertEqual(
            tcpInfo,
            [
                UInt(SocketDiagLayout.retransmitsOffset), UInt(SocketDiagLayout.backoffOffset),
                UInt(SocketDiagLayout.lastDataReceivedOffset), UInt(SocketDiagLayout.bytesReceivedOffset),
            ])
    }

    /// Random addresses whose groups are often zero (so every run length and position of `::`
    /// occurs), the IPv4-mapped and -compatible forms, and all of IPv4's edges.
}
