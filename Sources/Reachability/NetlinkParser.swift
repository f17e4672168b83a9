import CLinux
import NetAddress
import NetCore
import ReachabilityRules

/// Parses rtnetlink datagrams. Pure: bytes in, messages out. Anything
/// truncated, lying about its length or of the wrong size is counted as
/// malformed and skipped; nothing here can trap on input.
public enum NetlinkParser {
    public struct Result: Equatable, Sendable {
        public var messages: [RouteMessage] = []
        public var malformed = 0
    }

    /// Parses a datagram held in any bytes (copied to aligned memory first).
    public static func parse(_ bytes: some Collection<UInt8>) -> Result {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
        defer { buffer.deallocate() }
        _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        return parse(aligned: UnsafeRawBufferPointer(rebasing: buffer[..<bytes.count]))
    }

    /// Parses a datagram in memory aligned for nlmsghdr (as a receive buffer is).
    public static func parse(aligned buffer: UnsafeRawBufferPointer) -> Result {
        var result = Result()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return result }
        var remaining = Int32(clamping: buffer.count)
        var header = base.assumingMemoryBound(to: nlmsghdr.self)
        while CLinux_NLMSG_OK(header, remaining) != 0 {
            if let message = parseMessage(header) {
                result.messages.append(message)
            } else {
                result.malformed += 1
            }
            header = CLinux_NLMSG_NEXT(header, &remaining)
        }
        // Bytes left that do not form a message: a lying length or a truncated tail.
        if remaining > 0 { result.malformed += 1 }
        return result
    }

    private static func parseMessage(_ header: UnsafePointer<nlmsghdr>) -> RouteMessage? {
        let length = Int32(header.pointee.nlmsg_len)
        let sequence = header.pointee.nlmsg_seq
        let type = header.pointee.nlmsg_type
        func fits<T>(_: T.Type) -> Bool { length >= CLinux_NLMSG_LENGTH(Int32(MemoryLayout<T>.size)) }
        let data = CLinux_NLMSG_DATA(header)!

        switch Int32(type) {
        case NLMSG_DONE:
            return .done(sequence: sequence)
        case NLMSG_ERROR:
            guard fits(Int32.self) else { return nil }
            let code = data.loadUnaligned(as: Int32.self)
            guard code <= 0, code != .min else { return nil }
            return .error(sequence: sequence, errno: -code)
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
            guard fits(ifinfomsg.self) else { return nil }
            let info = data.assumingMemoryBound(to: ifinfomsg.self)
            guard info.pointee.ifi_index > 0 else { return nil }
            if type == UInt16(RTM_DELLINK) { return .deleteLink(index: info.pointee.ifi_index) }
            guard let link = parseLink(info, CLinux_IFLA_RTA(info), CLinux_IFLA_PAYLOAD(header)) else { return nil }
            return .newLink(link)
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
            guard fits(ifaddrmsg.self) else { return nil }
            let info = data.assumingMemoryBound(to: ifaddrmsg.self)
            guard let address = parseAddress(info, CLinux_IFA_RTA(info), CLinux_IFA_PAYLOAD(header)) else { return nil }
            return type == UInt16(RTM_NEWADDR) ? .newAddress(address) : .deleteAddress(address)
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            guard fits(rtmsg.self) else { return nil }
            let info = data.assumingMemoryBound(to: rtmsg.self)
            guard let route = parseRoute(info, CLinux_RTM_RTA(info), CLinux_RTM_PAYLOAD(header)) else { return nil }
            return type == UInt16(RTM_NEWROUTE) ? .newRoute(route, sequence: sequence) : .deleteRoute(route)
        case Int32(RTM_NEWNDUSEROPT):
            return parseRouterOptions(data, length: Int(length) - Int(CLinux_NLMSG_LENGTH(0)), type: type)
        default:
            return .ignored(type: type)
        }
    }

    /// RTM_NEWNDUSEROPT: an `nduseroptmsg`, then the options (`nduseropt_opts_len` bytes), then attributes.
    /// Only a router advertisement's options over IPv6 are taken; the options are read by `RouterOption`.
    private static func parseRouterOptions(_ data: UnsafeRawPointer, length: Int, type: UInt16) -> RouteMessage? {
        let header = MemoryLayout<nduseroptmsg>.size
        guard length >= header else { return nil }
        let message = data.loadUnaligned(as: nduseroptmsg.self)
        let optionsLength = Int(message.nduseropt_opts_len)
        guard message.nduseropt_ifindex > 0, header + optionsLength <= length else { return nil }
        guard Int32(message.nduseropt_family) == AF_INET6, message.nduseropt_icmp_type == 134 else { return .ignored(type: type) }
        let options = UnsafeRawBufferPointer(start: data + header, count: optionsLength)
        return .routerOptions(index: message.nduseropt_ifindex, options: Array(options))
    }

    /// Calls `body` with each attribute's type and payload; false when the
    /// attributes do not tile the space exactly (a lying length).
    package static func attributes(_ first: UnsafePointer<rtattr>?, _ length: Int32,
                           _ body: (UInt16, UnsafeRawBufferPointer) -> Bool) -> Bool {
        guard var attribute = first, length >= 0 else { return false }
        var remaining = length
        while CLinux_RTA_OK(attribute, remaining) != 0 {
            let payload = UnsafeRawBufferPointer(start: CLinux_RTA_DATA(attribute), count: Int(CLinux_RTA_PAYLOAD(attribute)))
            // The top bits flag nesting and byte order; the type is the rest.
            guard body(attribute.pointee.rta_type & CLinux_NLA_TYPE_MASK, payload) else { return false }
            attribute = CLinux_RTA_NEXT(attribute, &remaining)
        }
        // The last attribute may leave its alignment padding out; any other
        // leftover is bytes that claim to be an attribute and are not.
        return remaining <= 0
    }

    private static func string(_ payload: UnsafeRawBufferPointer, maxLength: Int) -> String? {
        let bytes = payload.prefix { $0 != 0 }
        guard !bytes.isEmpty, bytes.count <= maxLength else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func u32(_ payload: UnsafeRawBufferPointer) -> UInt32? {
        payload.count == 4 ? payload.loadUnaligned(as: UInt32.self) : nil
    }

    private static func parseLink(_ info: UnsafePointer<ifinfomsg>, _ first: UnsafePointer<rtattr>?, _ length: Int32) -> Link? {
        var name: String?
        var operState: UInt8 = 0
        var kind: String?
        let ok = attributes(first, length) { type, payload in
            switch Int32(type) {
            case Int32(IFLA_IFNAME):
                name = string(payload, maxLength: Int(IFNAMSIZ) - 1)
                return name != nil
            case Int32(IFLA_OPERSTATE):
                guard payload.count == 1 else { return false }
                operState = payload[0]
            case Int32(IFLA_LINKINFO):
                guard let base = payload.baseAddress, payload.count >= MemoryLayout<rtattr>.size else { return false }
                return attributes(base.assumingMemoryBound(to: rtattr.self), Int32(payload.count)) { nestedType, nested in
                    if nestedType == UInt16(IFLA_INFO_KIND) {
                        kind = string(nested, maxLength: 64)
                        return kind != nil
                    }
                    return true
                }
            default:
                break
            }
            return true
        }
        guard ok, let name else { return nil }
        return Link(index: info.pointee.ifi_index, name: name, flags: info.pointee.ifi_flags, operState: operState,
                    type: info.pointee.ifi_type, kind: kind)
    }

    private static func parseAddress(_ info: UnsafePointer<ifaddrmsg>, _ first: UnsafePointer<rtattr>?, _ length: Int32) -> InterfaceAddress? {
        let family = Int32(info.pointee.ifa_family)
        guard family == AF_INET || family == AF_INET6, info.pointee.ifa_index > 0 else { return nil }
        let expectedSize = family == AF_INET ? 4 : 16
        var local: IPAddress?
        var address: IPAddress?
        var flags = UInt32(info.pointee.ifa_flags)
        let ok = attributes(first, length) { type, payload in
            switch Int32(type) {
            case Int32(IFA_LOCAL), Int32(IFA_ADDRESS):
                guard payload.count == expectedSize, let value = IPAddress(bytes: payload) else { return false }
                if Int32(type) == Int32(IFA_LOCAL) { local = value } else { address = value }
            case Int32(IFA_FLAGS):
                guard let value = u32(payload) else { return false }
                flags = value
            default:
                break
            }
            return true
        }
        // On point-to-point links IFA_ADDRESS is the peer; IFA_LOCAL is ours.
        guard ok, let ours = local ?? address else { return nil }
        guard info.pointee.ifa_prefixlen <= ours.bitLength else { return nil }
        return InterfaceAddress(index: Int32(bitPattern: info.pointee.ifa_index), address: ours,
                                prefixLength: info.pointee.ifa_prefixlen, flags: flags, scope: info.pointee.ifa_scope)
    }

    private static func parseRoute(_ info: UnsafePointer<rtmsg>, _ first: UnsafePointer<rtattr>?, _ length: Int32) -> Route? {
        let family = Int32(info.pointee.rtm_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        let expectedSize = family == AF_INET ? 4 : 16
        var route = Route(family: info.pointee.rtm_family, table: UInt32(info.pointee.rtm_table), type: info.pointee.rtm_type,
                          destinationLength: info.pointee.rtm_dst_len)
        guard route.destinationLength <= UInt8(expectedSize * 8) else { return nil }
        let ok = attributes(first, length) { type, payload in
            func address() -> IPAddress? { payload.count == expectedSize ? IPAddress(bytes: payload) : nil }
            switch Int32(type) {
            case Int32(RTA_DST.rawValue):
                route.destination = address()
                return route.destination != nil
            case Int32(RTA_GATEWAY.rawValue):
                route.gateway = address()
                return route.gateway != nil
            case Int32(RTA_PREFSRC.rawValue):
                route.preferredSource = address()
                return route.preferredSource != nil
            case Int32(RTA_OIF.rawValue):
                guard let index = u32(payload), index > 0, index <= UInt32(Int32.max) else { return false }
                route.outputInterface = Int32(index)
            case Int32(RTA_TABLE.rawValue):
                guard let table = u32(payload) else { return false }
                route.table = table
            case Int32(RTA_PRIORITY.rawValue):
                guard let priority = u32(payload) else { return false }
                route.priority = priority
            default:
                break
            }
            return true
        }
        return ok ? route : nil
    }
}
