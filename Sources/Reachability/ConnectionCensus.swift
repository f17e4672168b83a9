import CLinux
import EventLoop
import Glibc
#if canImport(NetCore)
import NetCore
#endif
import ProbeRules
#if canImport(ReachabilityRules)
import ReachabilityRules
#endif

/// Counts this machine's established TCP connections for the traffic evidence: one sock_diag dump,
/// filtered in the kernel by state and source address, and the kernel's route to each remote
/// (cached) to tell which are routed like Host. What leaves it is counts, never an address.
/// Used by one thread at a time (the loop, or the sampler's thread).
final class ConnectionCensus {
    private let diag: NetlinkSocket
    private let routes: NetlinkSocket
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
    /// However long a dump is, it is abandoned after this many reads.
    static let readLimit = 200_000
    /// Targets on one interface share a dump taken this recently, so the kernel walks the sockets
    /// once per period whatever the number of targets.
    static let dumpReuse: UInt64 = 250_000_000
    private var lastDump: (sources: [IPAddress], family: Int32, at: UInt64, connections: [SocketDiag.Connection])?

    init() throws(SystemError) {
        diag = try NetlinkSocket(protocol: NETLINK_SOCK_DIAG, groups: 0)
        routes = try NetlinkSocket(groups: 0)
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
        guard (try? diag.send(request)) != nil else { return nil }
        var result = SocketDiag.Result()
        var reads = 0
        while !result.done && result.error == nil {
            reads += 1
            if reads > Self.readLimit { return nil }
            switch diag.receive() {
            case .datagram(let bytes):
                SocketDiag.parse(aligned: bytes, sequence: sequence, into: &result)
            case .dropped:
                break  // not the kernel's
            case .overrun:
                return nil  // part of the dump is lost
            case .wouldBlock:
                var poller = pollfd(fd: diag.fd, events: Int16(POLLIN), revents: 0)
                guard wait > 0, poll(&poller, 1, wait) == 1, poller.revents & Int16(POLLIN) != 0 else { return nil }
            }
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
