import CLinux
import Glibc
import NetAddress
import NetCore
import Reachability
import ReachabilityRules

/// sock_diag (NETLINK_SOCK_DIAG) as the traffic evidence needs it: the request for this machine's
/// established TCP sockets with given source addresses, filtered in the kernel, and what each
/// answer says. Pure: bytes in, bytes out; nothing here can trap on input.
public enum SocketDiag {
    /// At most this many source addresses go into the kernel's filter (its jumps are 16-bit); with more,
    /// the dump is not filtered by source and the caller keeps the connections whose `local` is one of them.
    public static let maxSources = 64

    /// What one connection says, as far as the traffic rules care.
    public struct Connection: Equatable, Sendable {
        public var local: IPAddress
        public var remote: IPAddress
        /// An RTO retransmission or a backoff is outstanding: sent data is not being acknowledged.
        public var retransmitting: Bool
        /// Data arrived within the last second.
        public var receivedRecently: Bool

        public init(local: IPAddress, remote: IPAddress, retransmitting: Bool, receivedRecently: Bool) {
            self.local = local
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

    /// A dump of the established TCP sockets whose source address is one of `sources` of `family`, each with
    /// its tcp_info; nil when no source is of `family`. `filtered`: whether the kernel filters by source (at
    /// most `maxSources` of them); else every established socket comes back.
    /// The kernel walks its whole table of established sockets per dump, however few there are (about 1 ms per
    /// 100,000 buckets), so an IPv4 dump is one walk for both families: the older TCPDIAG_GETSOCK request
    /// answers IPv4 sockets and IPv6 ones alike, and its filter sees through v4-mapped sources
    /// (::ffff:a.b.c.d, as dual-stack programs have them).
    public static func establishedTCP(family: Int32, sources: [IPAddress], sequence: UInt32) -> (request: [UInt8], filtered: Bool)? {
        let chosen = sources.filter { $0.family == family }
        guard !chosen.isEmpty else { return nil }
        let filtered = chosen.count <= maxSources
        let attributes = filtered ? [(CLinux_INET_DIAG_REQ_BYTECODE, sourceFilter(chosen))] : []
        let established: UInt32 = 1 << 1  // TCP_ESTABLISHED
        let info = UInt8(1 << (CLinux_INET_DIAG_INFO - 1))
        let message: [UInt8]
        if family == AF_INET {
            var request = inet_diag_req()
            request.idiag_ext = info
            request.idiag_states = established
            message = NetlinkRequest.message(type: Int32(CLinux_TCPDIAG_GETSOCK), flags: NLM_F_REQUEST | NLM_F_DUMP,
                                             sequence: sequence, body: request, attributes: attributes)
        } else {
            var request = inet_diag_req_v2()
            request.sdiag_family = UInt8(family)
            request.sdiag_protocol = UInt8(IPPROTO_TCP)
            request.idiag_ext = info
            request.idiag_states = established
            message = NetlinkRequest.message(type: Int32(CLinux_SOCK_DIAG_BY_FAMILY), flags: NLM_F_REQUEST | NLM_F_DUMP,
                                             sequence: sequence, body: request, attributes: attributes)
        }
        return (message, filtered)
    }

    /// inet_diag bytecode accepting a socket whose source is any of `sources`: per address an S_COND
    /// whose match falls through to a JMP to the end (accept) and whose miss skips that JMP; the last
    /// S_COND's miss jumps past the end (reject). The kernel's audit walks the chain of matches and
    /// refuses a jump that lands off it, so every instruction must be the next one's match target.
    static func sourceFilter(_ sources: some Collection<IPAddress>) -> [UInt8] {
        let conditionSizes = sources.map { 4 + 8 + $0.bytes.count }
        let total = conditionSizes.reduce(0, +) + 4 * (sources.count - 1)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(total)
        for (index, (address, size)) in zip(sources, conditionSizes).enumerated() {
            bytes += op(code: CLinux_INET_DIAG_BC_S_COND, yes: UInt8(size), no: UInt16(size + 4))
            var condition = inet_diag_hostcond()
            condition.family = UInt8(address.family)
            condition.prefix_len = address.bitLength
            condition.port = -1
            bytes += withUnsafeBytes(of: condition) { Array($0) } + address.bytes
            if index < sources.count - 1 {
                bytes += op(code: CLinux_INET_DIAG_BC_JMP, yes: 4, no: UInt16(total - bytes.count))
            }
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
        case Int32(CLinux_SOCK_DIAG_BY_FAMILY), Int32(CLinux_TCPDIAG_GETSOCK):
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
        let family = Int32(message.idiag_family)
        guard let local = withUnsafeBytes(of: message.id.idiag_src, { address(family: family, $0) }),
              let remote = withUnsafeBytes(of: message.id.idiag_dst, { address(family: family, $0) }) else { return nil }
        let attributesStart = (messageSize + 3) & ~3
        guard payloadLength >= attributesStart else { return nil }
        var facts: CLinux_tcp_facts?
        let attributes = UnsafeRawBufferPointer(start: data.advanced(by: attributesStart), count: payloadLength - attributesStart)
        let tiled = NetlinkParser.attributes(in: attributes) { type, payload in
            if type == CLinux_INET_DIAG_INFO {
                var read = CLinux_tcp_facts()
                if CLinux_read_tcp_info(payload.baseAddress, UInt(payload.count), &read) == 1 { facts = read }
            }
            return true
        }
        guard tiled, let facts else { return nil }
        let received = facts.last_data_recv < 1000 && (facts.has_bytes_received == 0 || facts.bytes_received > 0)
        return Connection(local: local, remote: remote, retransmitting: facts.retransmits > 0 || facts.backoff > 0, receivedRecently: received)
    }

    /// An address as inet_diag gives it; a v4-mapped one (::ffff:a.b.c.d) is the IPv4 address it maps.
    private static func address(family: Int32, _ bytes: UnsafeRawBufferPointer) -> IPAddress? {
        switch family {
        case AF_INET: IPAddress(bytes: bytes.prefix(4))
        case AF_INET6: IPAddress(bytes: bytes.prefix(16))?.unmapped
        default: nil
        }
    }
}
