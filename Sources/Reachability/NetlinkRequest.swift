import CLinux
import Glibc

/// Builds rtnetlink requests as bytes.
public enum NetlinkRequest {
    /// A dump of every link, address or route (RTM_GETLINK / GETADDR / GETROUTE).
    public static func dump(_ type: Int32, sequence: UInt32) -> [UInt8] {
        switch type {
        case Int32(RTM_GETLINK):
            return message(type: type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, body: ifinfomsg(), attributes: [])
        case Int32(RTM_GETADDR):
            return message(type: type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, body: ifaddrmsg(), attributes: [])
        default:
            return message(type: type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, body: rtmsg(), attributes: [])
        }
    }

    /// RTM_GETROUTE for one destination: the kernel answers with the route it
    /// would really use (policy rules and the most specific route included).
    public static func routeLookup(to destination: IPAddress, sequence: UInt32) -> [UInt8] {
        var body = rtmsg()
        body.rtm_family = UInt8(destination.family)
        body.rtm_dst_len = destination.bitLength
        return message(type: Int32(RTM_GETROUTE), flags: NLM_F_REQUEST, sequence: sequence, body: body,
                       attributes: [(UInt16(RTA_DST.rawValue), destination.bytes)])
    }

    static func message<Body>(type: Int32, flags: Int32, sequence: UInt32, body: Body,
                              attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var payload = withUnsafeBytes(of: body) { Array($0) }
        payload += [UInt8](repeating: 0, count: Int(CLinux_NLMSG_SPACE(Int32(payload.count)) - CLinux_NLMSG_LENGTH(Int32(payload.count))))
        for (type, value) in attributes {
            var header = rtattr()
            header.rta_len = UInt16(CLinux_RTA_LENGTH(Int32(value.count)))
            header.rta_type = type
            payload += withUnsafeBytes(of: header) { Array($0) } + value
            payload += [UInt8](repeating: 0, count: Int(CLinux_RTA_SPACE(Int32(value.count)) - CLinux_RTA_LENGTH(Int32(value.count))))
        }
        var header = nlmsghdr()
        header.nlmsg_len = UInt32(CLinux_NLMSG_LENGTH(Int32(payload.count)))
        header.nlmsg_type = UInt16(type)
        header.nlmsg_flags = UInt16(flags)
        header.nlmsg_seq = sequence
        return withUnsafeBytes(of: header) { Array($0) } + payload
    }
}
