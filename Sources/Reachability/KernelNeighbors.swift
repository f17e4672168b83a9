import EventLoop
import Glibc
import NetAddress
import ReachabilityRules
import Timekeeping

/// The kernel's neighbour table, asked for one entry over rtnetlink: the dump's parts are made as they are read, so
/// reading without waiting never blocks the loop.
public enum KernelNeighbors {
    /// The link-layer address the kernel keeps for `address` on `interfaceIndex`; nil when it has none usable.
    public static func linkLayerAddress(of address: IPAddress, interfaceIndex: Int32) -> [UInt8]? {
        let flags = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        guard let socket = try? Syscall.descriptor("socket(NETLINK_ROUTE)", { Glibc.socket(AF_NETLINK, flags, 0) })
        else { return nil }
        let request = NeighborDump.request(family: address.ipFamily == .v4 ? AF_INET : AF_INET6, sequence: 1)
        guard request.withUnsafeBytes({ Glibc.send(socket.raw, $0.baseAddress, $0.count, 0) }) == request.count else {
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        var found: [UInt8]?
        // Bounded: a neighbour table of a few thousand entries at most is read.
        for _ in 0..<64 {
            let count = buffer.withUnsafeMutableBytes {
                Glibc.recv(socket.raw, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            guard count > 0 else { break }
            let (hardware, ended) = NeighborDump.hardwareAddress(
                of: address, interfaceIndex: interfaceIndex, in: Array(buffer[..<count]))
            found = hardware ?? found
            if ended { break }
        }
        return found
    }
}

/// The kernel's answers for the cards behind addresses, kept a second: a flood of advertisements from one sender
/// asks the neighbour table once a second, not once each. Bounded: at most `limit` answers kept.
final class NeighborCards {
    static let lifetime = Duration.seconds(1)
    static let limit = 64
    private var known: [Key: (card: [UInt8]?, at: Instant)] = [:]

    private struct Key: Hashable {
        let address: IPAddress
        let interfaceIndex: Int32
    }

    func card(of address: IPAddress, interfaceIndex: Int32, now: Instant) -> [UInt8]? {
        let key = Key(address: address, interfaceIndex: interfaceIndex)
        if let kept = known[key], now - kept.at < Self.lifetime { return kept.card }
        if known.count >= Self.limit { known = known.filter { now - $0.value.at < Self.lifetime } }
        if known.count >= Self.limit { known.removeAll(keepingCapacity: true) }
        let card = KernelNeighbors.linkLayerAddress(of: address, interfaceIndex: interfaceIndex)
        known[key] = (card, now)
        return card
    }
}
