import NetAddress

/// Parses rtnetlink datagrams. Pure: bytes in, messages out, walked by offset (no C macro, no
/// struct cast), so it runs anywhere a test or fuzzer does. Anything truncated, lying about its
/// length or of the wrong size is counted as malformed and skipped; nothing here can trap on input.
public enum NetlinkParser {
    public struct Result: Equatable, Sendable {
        public var messages: [RouteMessage] = []
        public var malformed = 0

        public init(messages: [RouteMessage] = [], malformed: Int = 0) {
            self.messages = messages
            self.malformed = malformed
        }
    }

    /// Parses a datagram held in any bytes.
    public static func parse(_ bytes: some Collection<UInt8>) -> Result {
        Array(bytes).withUnsafeBytes { parse($0) }
    }

    /// Parses a datagram as it was received.
    public static func parse(_ buffer: UnsafeRawBufferPointer) -> Result {
        var result = Result()
        let tail = messages(in: buffer) { type, sequence, data in
            if type == NetlinkLayout.newRoute || type == NetlinkLayout.deleteRoute {
                // A multipath route is one message and a route per next hop.
                guard let routes = parseRoutes(data) else {
                    result.malformed += 1
                    return
                }
                for route in routes {
                    result.messages.append(
                        type == NetlinkLayout.newRoute ? .newRoute(route, sequence: sequence) : .deleteRoute(route))
                }
            } else if let parsed = parseMessage(type, sequence, data) {
                result.messages.append(parsed)
            } else {
                result.malformed += 1
            }
        }
        if tail { result.malformed += 1 }
        return result
    }

    /// Calls `body` with each message's type, sequence and data (what follows its header); true when
    /// bytes are left that do not form a message (a lying length or a truncated tail).
    public static func messages(
        in buffer: UnsafeRawBufferPointer,
        _ body: (_ type: UInt16, _ sequence: UInt32, _ data: UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        var offset = 0
        // NLMSG_OK: a whole header, a length that covers it and stays inside what is left.
        while buffer.count - offset >= NetlinkLayout.headerSize {
            let length = Int(buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            guard length >= NetlinkLayout.headerSize, length <= buffer.count - offset else { break }
            body(
                buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self),
                buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self),
                UnsafeRawBufferPointer(rebasing: buffer[(offset + NetlinkLayout.headerSize)..<(offset + length)]))
            offset += aligned(length)
        }
        return offset < buffer.count
    }

    /// Calls `body` with each attribute's type and payload in `buffer`; false when the attributes do
    /// not tile it exactly (a lying length).
    public static func attributes(
        in buffer: UnsafeRawBufferPointer, _ body: (UInt16, UnsafeRawBufferPointer) -> Bool
    ) -> Bool {
        var offset = 0
        // RTA_OK: a whole attribute header, a length that covers it and stays inside what is left.
        while buffer.count - offset >= NetlinkLayout.attributeHeaderSize {
            let length = Int(buffer.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            guard length >= NetlinkLayout.attributeHeaderSize, length <= buffer.count - offset else { return false }
            // The top bits flag nesting and byte order; the type is the rest.
            let type =
                buffer.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & NetlinkLayout.attributeTypeMask
            let payload = UnsafeRawBufferPointer(
                rebasing: buffer[(offset + NetlinkLayout.attributeHeaderSize)..<(offset + length)])
            guard body(type, payload) else { return false }
            offset += aligned(length)
        }
        // The last attribute may leave its alignment padding out; any other leftover is bytes that
        // claim to be an attribute and are not.
        return offset >= buffer.count
    }

    /// A length rounded up to netlink's 4-byte alignment (NLMSG_ALIGN, RTA_ALIGN).
    static func aligned(_ length: Int) -> Int { (length + 3) & ~3 }

    /// One message: its type, sequence and what follows its header.
    private static func parseMessage(
        _ type: UInt16, _ sequence: UInt32, _ data: UnsafeRawBufferPointer
    ) -> RouteMessage? {
        /// The fixed part of size `size`, and the attributes after it (from its aligned end).
        func body(_ size: Int) -> (fixed: UnsafeRawBufferPointer, attributes: UnsafeRawBufferPointer)? {
            guard data.count >= size else { return nil }
            let start = min(aligned(size), data.count)
            return (UnsafeRawBufferPointer(rebasing: data[..<size]), UnsafeRawBufferPointer(rebasing: data[start...]))
        }
        switch type {
        case NetlinkLayout.done:
            return .done(sequence: sequence)
        case NetlinkLayout.error:
            guard data.count >= 4 else { return nil }
            let code = data.loadUnaligned(as: Int32.self)
            guard code <= 0, code != .min else { return nil }
            return .error(sequence: sequence, errno: -code)
        case NetlinkLayout.newLink, NetlinkLayout.deleteLink:
            guard let (fixed, attributes) = body(NetlinkLayout.linkInfoSize) else { return nil }
            let index = fixed.loadUnaligned(fromByteOffset: 4, as: Int32.self)
            guard index > 0 else { return nil }
            if type == NetlinkLayout.deleteLink { return .deleteLink(index: index) }
            return parseLink(fixed, attributes).map { .newLink($0) }
        case NetlinkLayout.newAddress, NetlinkLayout.deleteAddress:
            guard let (fixed, attributes) = body(NetlinkLayout.addressInfoSize),
                let address = parseAddress(fixed, attributes)
            else { return nil }
            return type == NetlinkLayout.newAddress ? .newAddress(address) : .deleteAddress(address)
        case NetlinkLayout.newUserOption:
            return parseRouterOptions(data, type: type)
        default:
            return .ignored(type: type)
        }
    }

    /// RTM_NEWNDUSEROPT: an `nduseroptmsg`, then the options (`nduseropt_opts_len` bytes), then attributes.
    /// Only a router advertisement's options over IPv6 are taken; the options are read by `RouterOption`.
    private static func parseRouterOptions(_ data: UnsafeRawBufferPointer, type: UInt16) -> RouteMessage? {
        let header = NetlinkLayout.userOptionSize
        guard data.count >= header else { return nil }
        let family = data[0]
        let optionsLength = Int(data.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        let index = data.loadUnaligned(fromByteOffset: 4, as: Int32.self)
        let icmpType = data[8]
        guard index > 0, header + optionsLength <= data.count else { return nil }
        guard Int32(family) == IPAddress.familyIPv6, icmpType == 134 else { return .ignored(type: type) }
        // Then attributes: NDUSEROPT_SRCADDR (1), the advertisement's source address.
        var source: IPAddress?
        var offset = header + optionsLength
        while offset + 4 <= data.count {
            let length = Int(data.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let kind = data.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self)
            guard length >= 4, offset + length <= data.count else { return nil }
            if kind == 1, length == 4 + 16 { source = .v6(AddressBytes(Array(data[(offset + 4)..<(offset + 20)]))) }
            offset += (length + 3) & ~3
        }
        return .routerOptions(index: index, options: Array(data[header..<(header + optionsLength)]), source: source)
    }

    private static func string(_ payload: UnsafeRawBufferPointer, maxLength: Int) -> String? {
        let bytes = payload.prefix { $0 != 0 }
        guard !bytes.isEmpty, bytes.count <= maxLength else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func u32(_ payload: UnsafeRawBufferPointer) -> UInt32? {
        payload.count == 4 ? payload.loadUnaligned(as: UInt32.self) : nil
    }

    /// struct ifinfomsg: family, pad, type (16), index (32), flags (32), change (32).
    private static func parseLink(_ info: UnsafeRawBufferPointer, _ attributes: UnsafeRawBufferPointer) -> Link? {
        var name: String?
        var operState: UInt8 = 0
        var kind: String?
        let ok = self.attributes(in: attributes) { type, payload in
            switch type {
            case NetlinkLayout.linkName:
                name = string(payload, maxLength: NetlinkLayout.interfaceNameSize - 1)
                return name != nil
            case NetlinkLayout.linkOperState:
                guard payload.count == 1 else { return false }
                operState = payload[0]
            case NetlinkLayout.linkInfo:
                guard payload.count >= NetlinkLayout.attributeHeaderSize else { return false }
                return self.attributes(in: payload) { nestedType, nested in
                    if nestedType == NetlinkLayout.linkInfoKind {
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
        return Link(
            index: info.loadUnaligned(fromByteOffset: 4, as: Int32.self), name: name,
            flags: info.loadUnaligned(fromByteOffset: 8, as: UInt32.self), operState: operState,
            type: info.loadUnaligned(fromByteOffset: 2, as: UInt16.self), kind: kind)
    }

    /// struct ifaddrmsg: family, prefix length, flags, scope (8 each), index (32).
    private static func parseAddress(
        _ info: UnsafeRawBufferPointer, _ attributes: UnsafeRawBufferPointer
    ) -> InterfaceAddress? {
        let family = Int32(info[0])
        let index = info.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
        guard family == IPAddress.familyIPv4 || family == IPAddress.familyIPv6, index > 0 else { return nil }
        let expectedSize = family == IPAddress.familyIPv4 ? 4 : 16
        var local: IPAddress?
        var address: IPAddress?
        var flags = UInt32(info[2])
        let ok = self.attributes(in: attributes) { type, payload in
            switch type {
            case NetlinkLayout.addressLocal, NetlinkLayout.addressAddress:
                guard payload.count == expectedSize, let value = IPAddress(bytes: payload) else { return false }
                if type == NetlinkLayout.addressLocal { local = value } else { address = value }
            case NetlinkLayout.addressFlags:
                guard let value = u32(payload) else { return false }
                flags = value
            default:
                break
            }
            return true
        }
        // On point-to-point links IFA_ADDRESS is the peer; IFA_LOCAL is ours.
        guard ok, let ours = local ?? address else { return nil }
        let prefixLength = info[1]
        guard prefixLength <= ours.bitLength else { return nil }
        return InterfaceAddress(
            index: Int32(bitPattern: index), address: ours, prefixLength: prefixLength, flags: flags, scope: info[3])
    }

    /// A route message: the route, or one route per next hop of a multipath route (RTA_MULTIPATH, as the kernel merges
    /// IPv6 default routes of equal metric through two routers); nil when malformed.
    private static func parseRoutes(_ data: UnsafeRawBufferPointer) -> [Route]? {
        let size = NetlinkLayout.routeInfoSize
        guard data.count >= size else { return nil }
        let start = min(aligned(size), data.count)
        var nextHops: [(index: Int32?, gateway: IPAddress?)] = []
        guard
            let route = parseRoute(
                UnsafeRawBufferPointer(rebasing: data[..<size]), UnsafeRawBufferPointer(rebasing: data[start...]),
                nextHops: &nextHops)
        else { return nil }
        guard !nextHops.isEmpty else { return [route] }
        return nextHops.map { hop in
            var one = route
            one.outputInterface = hop.index ?? route.outputInterface
            one.gateway = hop.gateway
            return one
        }
    }

    /// RTA_MULTIPATH's payload: `struct rtnexthop` (length (16), flags, hops (8 each), interface index (32)), then
    /// that hop's attributes, each hop aligned; nil when the hops do not tile it.
    private static func nextHops(
        _ payload: UnsafeRawBufferPointer, addressSize: Int
    ) -> [(index: Int32?, gateway: IPAddress?)]? {
        var hops: [(index: Int32?, gateway: IPAddress?)] = []
        var offset = 0
        while payload.count - offset >= NetlinkLayout.nextHopSize {
            let length = Int(payload.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            guard length >= NetlinkLayout.nextHopSize, length <= payload.count - offset else { return nil }
            let index = payload.loadUnaligned(fromByteOffset: offset + 4, as: Int32.self)
            var gateway: IPAddress?
            let nested = UnsafeRawBufferPointer(
                rebasing: payload[(offset + NetlinkLayout.nextHopSize)..<(offset + length)])
            let ok = attributes(in: nested) { type, value in
                guard type == NetlinkLayout.routeGateway else { return true }
                gateway = value.count == addressSize ? IPAddress(bytes: value) : nil
                return gateway != nil
            }
            guard ok else { return nil }
            hops.append((index > 0 ? index : nil, gateway))
            offset += aligned(length)
        }
        return offset >= payload.count ? hops : nil
    }

    /// struct rtmsg: family, destination length, source length, tos, table, protocol, scope, type (8 each), flags (32).
    private static func parseRoute(
        _ info: UnsafeRawBufferPointer, _ attributes: UnsafeRawBufferPointer,
        nextHops hops: inout [(index: Int32?, gateway: IPAddress?)]
    ) -> Route? {
        let family = Int32(info[0])
        guard family == IPAddress.familyIPv4 || family == IPAddress.familyIPv6 else { return nil }
        let expectedSize = family == IPAddress.familyIPv4 ? 4 : 16
        var route = Route(family: info[0], table: UInt32(info[4]), type: info[7], destinationLength: info[1])
        guard route.destinationLength <= UInt8(expectedSize * 8) else { return nil }
        let ok = self.attributes(in: attributes) { type, payload in
            func address() -> IPAddress? { payload.count == expectedSize ? IPAddress(bytes: payload) : nil }
            switch type {
            case NetlinkLayout.routeDestination:
                route.destination = address()
                return route.destination != nil
            case NetlinkLayout.routeGateway:
                route.gateway = address()
                return route.gateway != nil
            case NetlinkLayout.routePreferredSource:
                route.preferredSource = address()
                return route.preferredSource != nil
            case NetlinkLayout.routeOutputInterface:
                guard let index = u32(payload), index > 0, index <= UInt32(Int32.max) else { return false }
                route.outputInterface = Int32(index)
            case NetlinkLayout.routeTable:
                guard let table = u32(payload) else { return false }
                route.table = table
            case NetlinkLayout.routePriority:
                guard let priority = u32(payload) else { return false }
                route.priority = priority
            case NetlinkLayout.routeMultipath:
                guard let read = nextHops(payload, addressSize: expectedSize) else { return false }
                hops = read
            default:
                break
            }
            return true
        }
        return ok ? route : nil
    }
}

/// rtnetlink's message types, attribute types and fixed sizes: the kernel's ABI, fixed for good;
/// ReachabilityRulesTests holds each to the C headers.
public enum NetlinkLayout {
    public static let headerSize = 16 // struct nlmsghdr
    public static let attributeHeaderSize = 4 // struct rtattr
    public static let attributeTypeMask: UInt16 = 0x3fff // NLA_TYPE_MASK
    public static let linkInfoSize = 16 // struct ifinfomsg
    public static let addressInfoSize = 8 // struct ifaddrmsg
    public static let routeInfoSize = 12 // struct rtmsg
    public static let userOptionSize = 16 // struct nduseroptmsg
    public static let interfaceNameSize = 16 // IFNAMSIZ
    public static let error: UInt16 = 2 // NLMSG_ERROR
    public static let done: UInt16 = 3 // NLMSG_DONE
    public static let newLink: UInt16 = 16 // RTM_NEWLINK
    public static let deleteLink: UInt16 = 17 // RTM_DELLINK
    public static let newAddress: UInt16 = 20 // RTM_NEWADDR
    public static let deleteAddress: UInt16 = 21 // RTM_DELADDR
    public static let newRoute: UInt16 = 24 // RTM_NEWROUTE
    public static let deleteRoute: UInt16 = 25 // RTM_DELROUTE
    public static let newUserOption: UInt16 = 68 // RTM_NEWNDUSEROPT
    public static let linkName: UInt16 = 3 // IFLA_IFNAME
    public static let linkOperState: UInt16 = 16 // IFLA_OPERSTATE
    public static let linkInfo: UInt16 = 18 // IFLA_LINKINFO
    public static let linkInfoKind: UInt16 = 1 // IFLA_INFO_KIND
    public static let addressAddress: UInt16 = 1 // IFA_ADDRESS
    public static let addressLocal: UInt16 = 2 // IFA_LOCAL
    public static let addressFlags: UInt16 = 8 // IFA_FLAGS
    public static let routeDestination: UInt16 = 1 // RTA_DST
    public static let routeOutputInterface: UInt16 = 4 // RTA_OIF
    public static let routeGateway: UInt16 = 5 // RTA_GATEWAY
    public static let routePriority: UInt16 = 6 // RTA_PRIORITY
    public static let routePreferredSource: UInt16 = 7 // RTA_PREFSRC
    public static let routeMultipath: UInt16 = 9 // RTA_MULTIPATH
    public static let routeTable: UInt16 = 15 // RTA_TABLE
    public static let nextHopSize = 8 // struct rtnexthop
}
