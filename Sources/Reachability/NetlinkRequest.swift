import CLinux
import Glibc
import NetAddress
import NetCore

/// Builds rtnetlink requests as bytes.
public enum NetlinkRequest {
    /// A dump of every link, address or route (RTM_GETLINK / GETADDR / GETROUTE).
    public static func dump(_ type: Int32, sequence: UInt32) -> [UInt8] {
        switch type {
        case Int32(RTM_GETLINK):
            return message(
                type: type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, body: ifinfomsg(), attributes: [])
        case Int32(RTM_GETADDR):
            return message(
                type: type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, body: ifaddrmsg(), attributes: [])
        default:
            return message(
                type: type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, body: rtmsg(), attributes: [])
        }
    }

    /// RTM_GETROUTE for one destination: the kernel answers with the route it
    /// would really use (policy rules and the most specific route included). A zoned
    /// (link-local) destination is looked up on its interface (RTA_OIF), as sending does.
    public static func routeLookup(to destination: IPAddress, sequence: UInt32) -> [UInt8] {
        var body = rtmsg()
        body.rtm_family = UInt8(destination.family)
        body.rtm_dst_len = destination.bitLength
        var attributes = [(UInt16(RTA_DST.rawValue), Array(destination.bytes))]
        if destination.zone != 0 {
            attributes.append((UInt16(RTA_OIF.rawValue), withUnsafeBytes(of: destination.zone) { Array($0) }))
        }
        return message(
            type: Int32(RTM_GETROUTE), flags: NLM_F_REQUEST, sequence: sequence, body: body, attributes: attributes)
    }

    /// RTM_NEWLINK setting a link administratively up or down (what `ip link set … up|down` sends).
    public static func setLink(index: Int32, up: Bool, sequence: UInt32) -> [UInt8] {
        var body = ifinfomsg()
        body.ifi_family = UInt8(AF_UNSPEC)
        body.ifi_index = index
        body.ifi_flags = up ? UInt32(IFF_UP.rawValue) : 0
        body.ifi_change = UInt32(IFF_UP.rawValue)
        return message(
            type: Int32(RTM_NEWLINK), flags: NLM_F_REQUEST | NLM_F_ACK, sequence: sequence, body: body, attributes: [])
    }

    /// RTM_NEWROUTE / RTM_DELROUTE for a default route via `gateway` in the main table.
    public static func defaultRoute(add: Bool, via gateway: IPAddress, sequence: UInt32) -> [UInt8] {
        var body = rtmsg()
        body.rtm_family = UInt8(gateway.family)
        body.rtm_table = UInt8(RT_TABLE_MAIN.rawValue)
        body.rtm_protocol = UInt8(RTPROT_BOOT)
        body.rtm_scope = UInt8(RT_SCOPE_UNIVERSE.rawValue)
        body.rtm_type = UInt8(RTN_UNICAST)
        let flags = add ? NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL : NLM_F_REQUEST | NLM_F_ACK
        return message(
            type: Int32(add ? RTM_NEWROUTE : RTM_DELROUTE), flags: flags, sequence: sequence, body: body,
            attributes: [(UInt16(RTA_GATEWAY.rawValue), Array(gateway.bytes))])
    }

    /// Attributes as rtattr headers and values, each padded to RTA_ALIGNTO.
    package static func encode(_ attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (type, value) in attributes {
            var header = rtattr()
            header.rta_len = UInt16(CLinux_RTA_LENGTH(Int32(value.count)))
            header.rta_type = type
            bytes += withUnsafeBytes(of: header) { Array($0) } + value
            bytes += [UInt8](
                repeating: 0, count: Int(CLinux_RTA_SPACE(Int32(value.count)) - CLinux_RTA_LENGTH(Int32(value.count))))
        }
        return bytes
    }

    package static func message<Body>(
        type: Int32, flags: Int32, sequence: UInt32, body: Body,
        attributes: [(UInt16, [UInt8])]
    ) -> [UInt8] {
        var payload = withUnsafeBytes(of: body) { Array($0) }
        payload += [UInt8](
            repeating: 0,
            count: Int(CLinux_NLMSG_SPACE(Int32(payload.count)) - CLinux_NLMSG_LENGTH(Int32(payload.count))))
        payload += encode(attributes)
        var header = nlmsghdr()
        header.nlmsg_len = UInt32(CLinux_NLMSG_LENGTH(Int32(payload.count)))
        header.nlmsg_type = UInt16(type)
        header.nlmsg_flags = UInt16(flags)
        header.nlmsg_seq = sequence
        return withUnsafeBytes(of: header) { Array($0) } + payload
    }
}
