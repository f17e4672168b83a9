import CLinux
import EventLoop
import Glibc
import NetAddress
import ReachabilityRules

/// Router advertisements read whole, where the kernel does not process them itself (`accept_ra` 0, as
/// NetworkManager and networkd set it, so RTNLGRP_ND_USEROPT stays silent): a raw ICMPv6 socket that lets only
/// type 134 through, opened with the capability probing already holds (none without it: the rtnetlink listener
/// remains). Only what a router on the link sent (link-local source, hop limit 255) is handed on.
final class RouterAdvertisementSocket {
    private let descriptor: Descriptor
    var fd: Int32 { descriptor.raw }
    private var buffer = [UInt8](repeating: 0, count: 2048)

    /// nil when the socket cannot be opened (no CAP_NET_RAW).
    init?() {
        let fd = CLinux_router_advertisement_socket()
        guard fd >= 0 else { return nil }
        descriptor = Descriptor(owning: fd)
    }

    enum Received {
        /// An advertisement's options, from `source` on interface `index`.
        case advertisement(index: Int32, source: IPAddress, options: [UInt8])
        /// Something that is no advertisement of a router on the link.
        case ignored
        case nothing
    }

    func receive() -> Received {
        var from = sockaddr_in6()
        var hopLimit: Int32 = -1
        let count = buffer.withUnsafeMutableBytes { CLinux_recv_with_hop_limit(fd, $0.baseAddress, UInt($0.count), &from, &hopLimit) }
        guard count >= 0 else { return .nothing }
        // A link-local sender's interface is its scope.
        let index = Int32(bitPattern: from.sin6_scope_id)
        let source = IPAddress.v6(AddressBytes(withUnsafeBytes(of: from.sin6_addr) { Array($0) }))
        guard index > 0, let options = RouterOption.advertisementOptions(Array(buffer[..<count]), source: source, hopLimit: hopLimit)
        else { return .ignored }
        return .advertisement(index: index, source: source, options: options)
    }
}
