import CLinux
import Glibc
#if canImport(NetCore)
import NetCore
#endif

/// sock_diag (NETLINK_SOCK_DIAG) as the traffic evidence needs it: the request for this machine's
/// established TCP sockets with given source addresses, filtered in the kernel, and what each
/// answer says. Pure: bytes in, bytes out; nothing here can trap on input.
public enum SocketDiag {
    /// At most this many source addresses go into one filter: the bytecode's accepting jump is one byte.
    public static let maxSources = 8

    /// What one connection says, as far as the traffic rules care.
    public struct Connection: Equatable, Sendable {
        public var remote: IPAddress
        /// An RTO retransmission or a backoff is outstanding: sent data is not being acknowledged.
        public var retransmitting: Bool
        /// Data arrived within the last second.
        public var receivedRecently: Bool

        public init(remote: IPAddress, retransmitting: Bool, receivedRecently: Bool) {
            self.remote = remote
            self.retransmitting = retransmitting
            self.receivedRecently = receivedRecently
        }
    }

    public struct Result: Equatable, Sendable {
        public var connections: [Connection] = []
        /// NLMSG_DONE for our sequence arrived: the dump is whole.
        public var done = false
        /// The kernel refused the request (errno).
        public var error: Int32?
        public var malformed = 0

        public init() {}
    }

    /// A dump of the established TCP sockets of `socketFamily` whose source address is one of `sources` of
    /// `family` (the first `maxSources` of them), each with its tcp_info; nil when no source is of `family`.
    /// IPv6 sockets with an IPv4 source (v4-mapped, as dual-stack programs have them) match IPv4 sources:
    /// the kernel's filter sees through the mapping.
    public static func establishedTCP(family: Int32, socketFamily: Int32, sources: [IPAddress], sequence: UInt32) -> [UInt8]? {
        let chosen = sources.filter { $0.family == family }.prefix(maxSources)
        guard !chosen.isEmpty else { return nil }
        var request = inet_diag_req_v2()
        request.sdiag_family = UInt8(socketFamily)
        request.sdiag_protocol = UInt8(IPPROTO_TCP)
        request.idiag_ext = UInt8(1 << (CLinux_INET_DIAG_INFO - 1))
        request.idiag_states = 1 << 1  // TCP_ESTABLISHED
        let filter = sourceFilter(chosen)
        return NetlinkRequest.message(type: Int32(CLinux_SOCK_DIAG_BY_FAMILY), flags: NLM_F_REQUEST | NLM_F_DUMP,
                                      sequence: sequence, body: request,
                                      attributes: [(CLinux_INET_DIAG_REQ_BYTECODE, filter)])
    }

    /// inet_diag bytecode accepting a socket whose source is any of `sources`: one S_COND per
    /// address, each jumping to the end (accept) on a match and to the next on a miss; the last
    /// jumps past the end (reject).
    static func sourceFilter(_ sources: some Collection<IPAddress>) -> [UInt8] {
        let sizes = sources.map { 4 + 8 + $0.bytes.count }
        let total = sizes.reduce(0, +)
        var bytes: [UInt8] = []
        var offset = 0
        for (address, size) in zip(sources, sizes) {
            let remaining = total - offset
            let last = offset + size == total
            bytes += op(code: CLinux_INET_DIAG_BC_S_COND, yes: UInt8(remaining), no: UInt16(last ? remaining + 4 : size))
            var condition = inet_diag_hostcond()
            condition.family = UInt8(address.family)
            condition.prefix_len = address.bitLength
            condition.port = -1
            bytes += withUnsafeBytes(of: condition) { Array($0) } + address.bytes
            offset += size
        }
        return bytes
    }

    private static func op(code: UInt8, yes: UInt8, no: UInt16) -> [UInt8] {
        withUnsafeBytes(of: inet_diag_bc_op(code: code, yes: yes, no: no)) { Array($0) }
    }

    /// Parses one datagram of the dump answering `sequence`; other sequences' messages are skipped.
    public static func parse(aligned buffer: UnsafeRawBufferPointer, sequence: UInt32, into result: inout Result) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        var remaining = Int32(clamping: buffer.count)
        var header = base.assumingMemoryBound(to: nlmsghdr.self)
        while CLinux_NLMSG_OK(header, remaining) != 0 {
            if header.pointee.nlmsg_seq == sequence {
                parseMessage(header, into: &result)
            }
            header = CLinux_NLMSG_NEXT(header, &remaining)
        }
        if remaining > 0 { result.malformed += 1 }
    }

    private static func parseMessage(_ header: UnsafePointer<nlmsghdr>, into result: inout Result) {
        let length = Int32(header.pointee.nlmsg_len)
        let data = UnsafeRawPointer(CLinux_NLMSG_DATA(header)!)
        switch Int32(header.pointee.nlmsg_type) {
        case NLMSG_DONE:
            result.done = true
        case NLMSG_ERROR:
            guard length >= CLinux_NLMSG_LENGTH(4) else {
                result.malformed += 1
                return
            }
            let code = data.loadUnaligned(as: Int32.self)
            if code < 0, code != .min { result.error = -code } else { result.malformed += 1 }
        case Int32(CLinux_SOCK_DIAG_BY_FAMILY):
            if let connection = connection(data, payloadLength: Int(length - CLinux_NLMSG_LENGTH(0))) {
                result.connections.append(connection)
            } else {
                result.malformed += 1
            }
        default:
            break
        }
    }

    private static func connection(_ data: UnsafeRawPointer, payloadLength: Int) -> Connection? {
        let messageSize = MemoryLayout<inet_diag_msg>.size
        guard payloadLength >= messageSize else { return nil }
        let message = data.loadUnaligned(as: inet_diag_msg.self)
        let remote: IPAddress?
        switch Int32(message.idiag_family) {
        case AF_INET: remote = withUnsafeBytes(of: message.id.idiag_dst) { IPAddress(bytes: $0.prefix(4)) }
        case AF_INET6:
            remote = withUnsafeBytes(of: message.id.idiag_dst) { bytes in
                // A v4-mapped remote (::ffff:a.b.c.d) is the IPv4 address it maps.
                bytes.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
                    ? IPAddress(bytes: bytes[12..<16]) : IPAddress(bytes: bytes.prefix(16))
            }
        default: remote = nil
        }
        guard let remote else { return nil }
        let attributesStart = (messageSize + 3) & ~3
        guard payloadLength >= attributesStart else { return nil }
        var facts: CLinux_tcp_facts?
        let tiled = NetlinkParser.attributes(data.advanced(by: attributesStart).assumingMemoryBound(to: rtattr.self),
                                             Int32(payloadLength - attributesStart)) { type, payload in
            if type == CLinux_INET_DIAG_INFO {
                var read = CLinux_tcp_facts()
                if CLinux_read_tcp_info(payload.baseAddress, UInt(payload.count), &read) == 1 { facts = read }
            }
            return true
        }
        guard tiled, let facts else { return nil }
        let received = facts.last_data_recv < 1000 && (facts.has_bytes_received == 0 || facts.bytes_received > 0)
        return Connection(remote: remote, retransmitting: facts.retransmits > 0 || facts.backoff > 0, receivedRecently: received)
    }
}
