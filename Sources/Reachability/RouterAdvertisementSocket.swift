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
        guard let datagram = HopLimitDatagram.receive(fd, into: &buffer) else { return .nothing }
        // A link-local sender's interface is its scope.
        guard datagram.scope > 0, let source = datagram.source,
            let options = RouterOption.advertisementOptions(
                Array(buffer[..<datagram.count]), source: source, hopLimit: datagram.hopLimit)
        else { return .ignored }
        return .advertisement(index: datagram.scope, source: source, options: options)
    }
}
