import CLinux
import Glibc
import NetAddress

/// One datagram from a raw ICMPv6 socket opened with IPV6_RECVHOPLIMIT (router advertisements, the neighbour check's
/// advertisements): RFC 4861 takes what the link sent only, which arrives with hop limit 255.
public struct HopLimitDatagram {
    public let count: Int
    /// The sender, with its interface as its zone when link-local.
    public let source: IPAddress?
    /// The interface of a link-local sender (its scope); 0 otherwise.
    public let scope: Int32
    /// -1 when the kernel gave none.
    public let hopLimit: Int32

    /// The next datagram into `buffer`; nil when none is waiting (or the read failed).
    public static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> HopLimitDatagram? {
        var from = sockaddr_in6()
        var hopLimit: Int32 = -1
        let count = buffer.withUnsafeMutableBytes {
            CLinux_recv_with_hop_limit(fd, $0.baseAddress, UInt($0.count), &from, &hopLimit)
        }
        guard count >= 0 else { return nil }
        let source = withUnsafeBytes(of: &from) { raw in
            raw.baseAddress.flatMap { IPAddress(socketAddress: $0, length: raw.count) }
        }
        return HopLimitDatagram(
            count: count, source: source, scope: Int32(bitPattern: from.sin6_scope_id), hopLimit: hopLimit)
    }
}
