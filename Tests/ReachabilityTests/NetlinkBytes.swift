@testable import Reachability
import CLinux
import Glibc
import NetAddress
import NetCore

/// Canned rtnetlink datagrams, built the way the kernel lays them out.
enum NetlinkBytes {
    static func attribute(_ type: Int32, _ value: [UInt8]) -> (UInt16, [UInt8]) { (UInt16(type), value) }
    static func string(_ s: String) -> [UInt8] { Array(s.utf8) + [0] }
    static func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v) { Array($0) } }

    /// Nested attributes (IFLA_LINKINFO's IFLA_INFO_KIND).
    static func nested(_ attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        NetlinkRequest.encode(attributes)
    }

    static let upFlags = UInt32(IFF_UP.rawValue | IFF_RUNNING.rawValue | IFF_LOWER_UP.rawValue)

    static func link(
        index: Int32, name: String, flags: UInt32 = upFlags, type: Int32 = ARPHRD_ETHER, kind: String? = nil,
        delete: Bool = false, sequence: UInt32 = 0
    ) -> [UInt8] {
        var body = ifinfomsg()
        body.ifi_family = UInt8(AF_UNSPEC)
        body.ifi_index = index
        body.ifi_flags = flags
        body.ifi_type = UInt16(type)
        var attributes = [attribute(Int32(IFLA_IFNAME), string(name)), attribute(Int32(IFLA_OPERSTATE), [6])]
        if let kind {
            attributes.append(attribute(Int32(IFLA_LINKINFO), nested([(UInt16(IFLA_INFO_KIND), string(kind))])))
        }
        return NetlinkRequest.message(
            type: Int32(delete ? RTM_DELLINK : RTM_NEWLINK), flags: 0, sequence: sequence,
            body: body, attributes: attributes)
    }

    static func address(index: Int32, _ text: String, prefix: UInt8, flags: UInt32 = 0, delete: Bool = false) -> [UInt8]
    {
        let address = IPAddress(text)!
        var body = ifaddrmsg()
        body.ifa_family = UInt8(address.family)
        body.ifa_prefixlen = prefix
        body.ifa_index = UInt32(index)
        body.ifa_flags = UInt8(truncatingIfNeeded: flags)
        return NetlinkRequest.message(
            type: Int32(delete ? RTM_DELADDR : RTM_NEWADDR), flags: 0, sequence: 0, body: body,
            attributes: [
                attribute(Int32(IFA_LOCAL), Array(address.bytes)),
                attribute(Int32(IFA_ADDRESS), Array(address.bytes)),
                attribute(Int32(IFA_FLAGS), u32(flags)),
            ])
    }

    static func route(
        family: Int32 = AF_INET, destination: String? = nil, length: UInt8 = 0, oif: UInt32? = nil,
        gateway: String? = nil, source: String? = nil, table: UInt32 = 254, sequence: UInt32 = 0,
        delete: Bool = false, nextHops: [(oif: Int32, gateway: String)] = []
    ) -> [UInt8] {
        var body = rtmsg()
        body.rtm_family = UInt8(family)
        body.rtm_dst_len = length
        body.rtm_table = UInt8(truncatingIfNeeded: table)
        body.rtm_type = UInt8(RTN_UNICAST)
        var attributes: [(UInt16, [UInt8])] = [attribute(Int32(RTA_TABLE.rawValue), u32(table))]
        if let destination {
            attributes.append(attribute(Int32(RTA_DST.rawValue), Array(IPAddress(destination)!.bytes)))
        }
        if let oif { attributes.append(attribute(Int32(RTA_OIF.rawValue), u32(oif))) }
        if let gateway { attributes.append(attribute(Int32(RTA_GATEWAY.rawValue), Array(IPAddress(gateway)!.bytes))) }
        if let source { attributes.append(attribute(Int32(RTA_PREFSRC.rawValue), Array(IPAddress(source)!.bytes))) }
        if !nextHops.isEmpty { attributes.append(attribute(Int32(RTA_MULTIPATH.rawValue), multipath(nextHops))) }
        return NetlinkRequest.message(
            type: Int32(delete ? RTM_DELROUTE : RTM_NEWROUTE), flags: 0, sequence: sequence,
            body: body, attributes: attributes)
    }

    /// RTA_MULTIPATH's payload: a `struct rtnexthop` per hop, its RTA_GATEWAY nested after it.
    static func multipath(_ hops: [(oif: Int32, gateway: String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for hop in hops {
            let nested = nested([attribute(Int32(RTA_GATEWAY.rawValue), Array(IPAddress(hop.gateway)!.bytes))])
            var header = rtnexthop()
            header.rtnh_len = UInt16(MemoryLayout<rtnexthop>.size + nested.count)
            header.rtnh_ifindex = hop.oif
            bytes += withUnsafeBytes(of: header) { Array($0) } + nested
        }
        return bytes
    }

    static func done(sequence: UInt32) -> [UInt8] {
        NetlinkRequest.message(type: NLMSG_DONE, flags: NLM_F_MULTI, sequence: sequence, body: Int32(0), attributes: [])
    }

    static func error(sequence: UInt32, errno code: Int32) -> [UInt8] {
        var body = nlmsgerr()
        body.error = -code
        return NetlinkRequest.message(type: NLMSG_ERROR, flags: 0, sequence: sequence, body: body, attributes: [])
    }

    /// RTM_NEWNDUSEROPT: a router advertisement's options as the kernel passes them on.
    static func routerOptions(
        index: Int32, _ options: [UInt8], family: Int32 = AF_INET6, icmpType: UInt8 = 134,
        claimedLength: UInt16? = nil
    ) -> [UInt8] {
        var header = nduseroptmsg()
        header.nduseropt_family = UInt8(family)
        header.nduseropt_opts_len = claimedLength ?? UInt16(options.count)
        header.nduseropt_ifindex = index
        header.nduseropt_icmp_type = icmpType
        let body = withUnsafeBytes(of: header) { Array($0) } + options
        var message = nlmsghdr()
        message.nlmsg_len = UInt32(MemoryLayout<nlmsghdr>.size + body.count)
        message.nlmsg_type = UInt16(RTM_NEWNDUSEROPT)
        let bytes = withUnsafeBytes(of: message) { Array($0) } + body
        return bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }
}
