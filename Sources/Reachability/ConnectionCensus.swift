import CLinux
import EventLoop
import Glibc
#if canImport(NetCore)
import NetCore
#endif
import ProbeRules

/// Counts this machine's established TCP connections for the traffic evidence: one sock_diag dump,
/// filtered in the kernel by state and source address, and the kernel's route to each remote
/// (cached) to tell which are routed like Host. What leaves it is counts, never an address.
/// Used by one thread at a time (the loop, or the sampler's thread).
final class ConnectionCensus {
    private let diag: Descriptor
    private let routes: NetlinkSocket
    private let buffer: UnsafeMutableRawBufferPointer
    private var sequence: UInt32 = 0

    /// How the kernel routes to an address: its output interface and gateway (nil: on-link).
    struct RouteKey: Hashable {
        var interface: Int32?
        var gateway: IPAddress?
    }

    /// Route lookups, kept `cacheLifetime`, at most `cacheLimit` of them.
    private var cache: [IPAddress: RouteKey?] = [:]
    private var cacheBorn: UInt64 = 0
    static let cacheLifetime: UInt64 = 10_000_000_000
    static let cacheLimit = 16_384
    /// However many messages a dump has, no more are read than this.
    static let messageLimit = 200_000
    /// Targets on one interface share a dump taken this recently, so the kernel walks the sockets
    /// once per period whatever the number of targets.
    static let dumpReuse: UInt64 = 250_000_000
    private var lastDump: (sources: [IPAddress], family: Int32, at: UInt64, connections: [SocketDiag.Connection])?

    init() throws(SystemError) {
        diag = try Syscall.descriptor("socket(NETLINK_SOCK_DIAG)") {
            socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                   NETLINK_SOCK_DIAG)
        }
        routes = try NetlinkSocket(groups: 0)
        buffer = .allocate(byteCount: 64 * 1024, alignment: 8)
    }

    deinit {
        buffer.deallocate()
    }

    /// The connections from `sources` (addresses on the route's interface) reduced to counts; nil
    /// when the kernel could not be asked. `wait`: how long a read may wait for the kernel (ms).
    func sample(host: IPAddress, sources: [IPAddress], now: UInt64, wait: Int32) -> TrafficSample? {
        if now &- cacheBorn > Self.cacheLifetime || cache.count > Self.cacheLimit {
            cache.removeAll(keepingCapacity: true)
            cacheBorn = now
        }
        var dump: [SocketDiag.Connection] = []
        if let last = lastDump, last.sources == sources, last.family == host.family, now &- last.at < Self.dumpReuse {
            dump = last.connections
        } else {
            // IPv4 connections live in IPv4 sockets and, v4-mapped, in dual-stack IPv6 ones.
            for socketFamily in host.family == AF_INET ? [AF_INET, AF_INET6] : [AF_INET6] {
                sequence &+= 1
                guard let request = SocketDiag.establishedTCP(family: host.family, socketFamily: socketFamily, sources: sources,
                                                              sequence: sequence) else { return TrafficSample() }
                guard let found = self.dump(request, wait: wait) else { return nil }
                dump += found
            }
            lastDump = (sources, host.family, now, dump)
        }
        let hostRoute = route(to: host)
        var receiving = Set<IPAddress>()
        var retransmitting = Set<IPAddress>()
        for connection in dump where connection.receivedRecently || connection.retransmitting {
            guard connection.remote == host || (hostRoute != nil && route(to: connection.remote) == hostRoute) else { continue }
            if connection.receivedRecently { receiving.insert(connection.remote) }
            if connection.retransmitting { retransmitting.insert(connection.remote) }
        }
        return TrafficSample(connections: dump.count, receivingRemotes: receiving.count,
                             retransmittingRemotes: retransmitting.count)
    }

    private func dump(_ request: [UInt8], wait: Int32) -> [SocketDiag.Connection]? {
        let sent = request.withUnsafeBytes { send(diag.raw, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { return nil }
        var result = SocketDiag.Result()
        var messages = 0
        while !result.done && result.error == nil {
            var sender = sockaddr_nl()
            var senderLength = socklen_t(MemoryLayout<sockaddr_nl>.size)
            let count = withUnsafeMutablePointer(to: &sender) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(diag.raw, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &senderLength)
                }
            }
            if count < 0 {
                if errno == EINTR { continue }
                guard errno == EAGAIN, wait > 0 else { return nil }
                var poller = pollfd(fd: diag.raw, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, wait) == 1 else { return nil }
                continue
            }
            guard count > 0 else { return nil }
            // Only the kernel may speak.
            guard sender.nl_pid == 0 else { continue }
            SocketDiag.parse(aligned: UnsafeRawBufferPointer(rebasing: buffer[..<count]), sequence: sequence, into: &result)
            messages += 1
            if messages > Self.messageLimit { return nil }
        }
        return result.error == nil ? result.connections : nil
    }

    /// The kernel's route to `address` (cached); nil when it has none.
    private func route(to address: IPAddress) -> RouteKey? {
        if let known = cache[address] { return known }
        sequence &+= 1
        let asked = sequence
        var found: RouteKey?
        if (try? routes.send(NetlinkRequest.routeLookup(to: address, sequence: asked))) != nil {
            // The kernel answers a lookup while it is being sent: the reply is already queued.
            reading: for _ in 0..<8 {
                guard case .datagram(let bytes) = routes.receive() else { break }
                for message in NetlinkParser.parse(aligned: bytes).messages {
                    switch message {
                    case .newRoute(let route, let sequence) where sequence == asked:
                        if route.type == UInt8(RTN_UNICAST) || route.type == UInt8(RTN_LOCAL) {
                            found = RouteKey(interface: route.outputInterface, gateway: route.gateway)
                        }
                        break reading
                    case .error(let sequence, _) where sequence == asked:
                        break reading
                    default:
                        continue
                    }
                }
            }
        }
        cache[address] = .some(found)
        return found
    }
}
