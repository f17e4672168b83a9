import CLinux
import Glibc
import NetAddress
import NetCore
import Reachability
import ReachabilityRules

/// sock_diag (NETLINK_SOCK_DIAG) as the traffic evidence needs it: the request for this machine's
/// established TCP sockets with given source addresses, filtered in the kernel (the answer is
/// `SocketDiagReply`'s). Bytes out, built from the C structs.
public enum SocketDiag {
    /// At most this many source addresses go into the kernel's filter (its jumps are 16-bit); with more,
    /// the dump is not filtered by source and the caller keeps the connections whose `local` is one of them.
    public static let maxSources = 64

    /// A dump of the established TCP sockets whose source address is one of `sources` of `family`, each with
    /// its tcp_info; nil when no source is of `family`. `filtered`: whether the kernel filters by source (at
    /// most `maxSources` of them); else every established socket comes back.
    /// The kernel walks its whole table of established sockets per dump, however few there are (about 1 ms per
    /// 100,000 buckets), so an IPv4 dump is one walk for both families: the older TCPDIAG_GETSOCK request
    /// answers IPv4 sockets and IPv6 ones alike, and its filter sees through v4-mapped sources
    /// (::ffff:a.b.c.d, as dual-stack programs have them).
    public static func establishedTCP(
        family: Int32, sources: [IPAddress], sequence: UInt32
    ) -> (request: [UInt8], filtered: Bool)? {
        let chosen = sources.filter { $0.family == family }
        guard !chosen.isEmpty else { return nil }
        let filtered = chosen.count <= maxSources
        let attributes = filtered ? [(CLinux_INET_DIAG_REQ_BYTECODE, sourceFilter(chosen))] : []
        let established: UInt32 = 1 << 1 // TCP_ESTABLISHED
        let info = UInt8(1 << (CLinux_INET_DIAG_INFO - 1))
        let message: [UInt8]
        if family == AF_INET {
            var request = inet_diag_req()
            request.idiag_ext = info
            request.idiag_states = established
            message = NetlinkRequest.message(
                type: Int32(CLinux_TCPDIAG_GETSOCK), flags: NLM_F_REQUEST | NLM_F_DUMP,
                sequence: sequence, body: request, attributes: attributes)
        } else {
            var request = inet_diag_req_v2()
            request.sdiag_family = UInt8(family)
            request.sdiag_protocol = UInt8(IPPROTO_TCP)
            request.idiag_ext = info
            request.idiag_states = established
            message = NetlinkRequest.message(
                type: Int32(CLinux_SOCK_DIAG_BY_FAMILY), flags: NLM_F_REQUEST | NLM_F_DUMP,
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
}
