import NetAddress

/// The kernel's answer to a sock_diag dump of established TCP sockets (NETLINK_SOCK_DIAG): each
/// socket's addresses and what its tcp_info says about traffic. Pure: bytes in, values out, walked
/// by offset; anything truncated or lying about its length is counted as malformed, never a trap.
public enum SocketDiagReply {
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

    /// Parses one datagram of the dump answering `sequence`; other sequences' messages are skipped.
    public static func parse(_ buffer: UnsafeRawBufferPointer, sequence: UInt32, into result: inout Result) {
        let tail = NetlinkParser.messages(in: buffer) { type, messageSequence, data in
            if messageSequence == sequence { parseMessage(type, data, into: &result) }
        }
        if tail { result.malformed += 1 }
    }

    private static func parseMessage(_ type: UInt16, _ data: UnsafeRawBufferPointer, into result: inout Result) {
        switch type {
        case NetlinkLayout.done:
            result.done = true
        case NetlinkLayout.error:
            guard data.count >= 4 else {
                result.malformed += 1
                return
            }
            let code = data.loadUnaligned(as: Int32.self)
            if code < 0, code != .min { result.error = -code } else { result.malformed += 1 }
        case SocketDiagLayout.byFamily, SocketDiagLayout.tcpGetSocket:
            if let connection = connection(data) {
                result.connections.append(connection)
            } else {
                result.malformed += 1
            }
        default:
            break
        }
    }

    /// struct inet_diag_msg (family first, the addresses in its inet_diag_sockid), then attributes.
    private static func connection(_ data: UnsafeRawBufferPointer) -> Connection? {
        guard data.count >= SocketDiagLayout.messageSize else { return nil }
        let family = Int32(data[0])
        guard let local = address(family: family, data, at: SocketDiagLayout.sourceOffset),
            let remote = address(family: family, data, at: SocketDiagLayout.destinationOffset)
        else { return nil }
        var facts: TCPFacts?
        let attributes = UnsafeRawBufferPointer(rebasing: data[NetlinkParser.aligned(SocketDiagLayout.messageSize)...])
        let tiled = NetlinkParser.attributes(in: attributes) { type, payload in
            if type == SocketDiagLayout.info, let read = TCPFacts(payload) { facts = read }
            return true
        }
        guard tiled, let facts else { return nil }
        let received = facts.lastDataReceived < 1000 && (facts.bytesReceived.map { $0 > 0 } ?? true)
        return Connection(
            local: local, remote: remote, retransmitting: facts.retransmits > 0 || facts.backoff > 0,
            receivedRecently: received)
    }

    /// An address as inet_diag gives it; a v4-mapped one (::ffff:a.b.c.d) is the IPv4 address it maps.
    private static func address(family: Int32, _ data: UnsafeRawBufferPointer, at offset: Int) -> IPAddress? {
        switch family {
        case IPAddress.familyIPv4: IPAddress(bytes: data[offset..<(offset + 4)])
        case IPAddress.familyIPv6: IPAddress(bytes: data[offset..<(offset + 16)])?.unmapped
        default: nil
        }
    }

    /// What the traffic rules read of a socket's tcp_info, from however much of it the kernel sent.
    struct TCPFacts {
        var retransmits: UInt8
        var backoff: UInt8
        /// Milliseconds since data last arrived.
        var lastDataReceived: UInt32
        /// nil: the kernel's tcp_info is too short to say (before Linux 4.1).
        var bytesReceived: UInt64?

        /// nil when too short to hold even when data last arrived.
        init?(_ info: UnsafeRawBufferPointer) {
            guard info.count >= SocketDiagLayout.lastDataReceivedOffset + 4 else { return nil }
            retransmits = info[SocketDiagLayout.retransmitsOffset]
            backoff = info[SocketDiagLayout.backoffOffset]
            lastDataReceived = info.loadUnaligned(
                fromByteOffset: SocketDiagLayout.lastDataReceivedOffset, as: UInt32.self)
            bytesReceived =
                info.count >= SocketDiagLayout.bytesReceivedOffset + 8
                ? info.loadUnaligned(fromByteOffset: SocketDiagLayout.bytesReceivedOffset, as: UInt64.self) : nil
        }
    }
}

/// sock_diag's message and attribute types and the layouts the reply is read by: the kernel's ABI,
/// fixed for good; ReachabilityRulesTests holds each to the C headers.
public enum SocketDiagLayout {
    public static let byFamily: UInt16 = 20 // SOCK_DIAG_BY_FAMILY
    public static let tcpGetSocket: UInt16 = 18 // TCPDIAG_GETSOCK
    public static let info: UInt16 = 2 // INET_DIAG_INFO
    public static let messageSize = 72 // struct inet_diag_msg
    public static let sourceOffset = 8 // inet_diag_msg.id.idiag_src
    public static let destinationOffset = 24 // inet_diag_msg.id.idiag_dst
    public static let retransmitsOffset = 2 // tcp_info.tcpi_retransmits
    public static let backoffOffset = 4 // tcp_info.tcpi_backoff
    public static let lastDataReceivedOffset = 52 // tcp_info.tcpi_last_data_recv
    public static let bytesReceivedOffset = 128 // tcp_info.tcpi_bytes_received
}
