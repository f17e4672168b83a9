import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import ProbeRules
import Reachability
import ReachabilityRules
import Timekeeping

/// Why a sample of this machine's connections could not be taken.
public enum CensusFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kernel refused the request (errno), or a socket call failed.
    case refused(SystemError)
    /// Part of the dump was lost (the socket's buffer overran), or the kernel did not finish in time.
    case incomplete

    public var description: String {
        switch self {
        case .refused(let error): "sock_diag: \(error)"
        case .incomplete: "sock_diag: the dump came back incomplete"
        }
    }
}

/// Counts this machine's established TCP connections for the traffic evidence: one sock_diag dump,
/// filtered in the kernel by state and source address, and the kernel's route to each remote
/// (cached) to tell which are routed like Host. What leaves it is counts, never an address.
/// Used by one thread at a time (the loop, or the sampler's thread).
final class ConnectionCensus {
    private let diag: NetlinkSocket
    private let routes: NetlinkSocket
    private(set) var sequence: UInt32 = 0

    /// How the kernel routes to an address: its output interface and gateway (nil: on-link).
    struct RouteKey: Hashable {
        var interface: Int32?
        var gateway: IPAddress?
    }

    typealias Failure = CensusFailure

    /// Route lookups, kept `cacheLifetime`, at most `cacheLimit` of them.
    private var cache: [IPAddress: RouteKey?] = [:]
    private var cacheBorn = Instant.origin
    static let cacheLifetime = Duration.seconds(10)
    static let cacheLimit = 16_384
    /// However long a dump is, it is abandoned after this many reads.
    static let readLimit = 200_000

    /// One dump, reduced to what the samples read: its size and the connections that say something.
    private struct Dump {
        var at: Instant
        var total: Int
        var telling: [SocketDiagReply.Connection]
    }

    private struct DumpKey: Hashable {
        var family: Int32
        var sources: [IPAddress]
    }

    /// Targets routed through one interface share a dump: the kernel walks the sockets at most once per
    /// `reuse` (250 ms, or `TrafficWatch.costFactor` times what the last full dump cost when that is
    /// longer), so sampling stays within its share of a core whatever the number of targets.
    private var dumps: [DumpKey: Dump] = [:]
    static let dumpLimit = 16
    static let minimumReuse = Duration.milliseconds(250)
    /// The CPU the last full dump took (this thread).
    var lastDumpCost = Duration.zero
    /// Walks of the kernel's sockets so far.
    private(set) var dumpsTaken = 0

    var reuse: Duration {
        max(
            Self.minimumReuse,
            Duration(
                nanoseconds: lastDumpCost.nanoseconds.multipliedReportingOverflow(by: TrafficWatch.costFactor)
                    .partialValue))
    }

    /// How long a dump that found `total` connections serves: one that found none serves a second, so targets
    /// sampling at their probes' pace (a second apart at the shortest default) share one walk a second.
    func reusePeriod(total: Int) -> Duration {
        total == 0 ? max(reuse, Self.emptyReuse) : reuse
    }
    static let emptyReuse = Duration.seconds(1)

    init() throws(SystemError) {
        diag = try NetlinkSocket(protocol: NETLINK_SOCK_DIAG, groups: 0)
        routes = try NetlinkSocket(groups: 0)
    }

    /// Whether a sample for `host` from `sources` now would walk the kernel's sockets, and the last such
    /// walk was too dear to take on the loop.
    func needsDearDump(host: IPAddress, sources: [IPAddress], now: Instant) -> Bool {
        recentDump(DumpKey(family: host.family, sources: sources), now: now) == nil
            && lastDumpCost >= TrafficWatch.inlineCost
    }

    /// The connections from `sources` (addresses on the route's interface) reduced to counts.
    /// `wait`: how long a read may wait for the kernel (ms); `fresh`: walk the sockets even when a recent dump would serve.
    /// `route`: Host's route as the route core knows it; nil: the kernel is asked (as it is for each remote's).
    func sample(
        host: IPAddress, route: HostRoute? = nil, sources: [IPAddress], now: Instant, wait: Int32,
        fresh: Bool = false
    ) -> Result<TrafficSample, Failure> {
        if now &- cacheBorn > Self.cacheLifetime || cache.count > Self.cacheLimit {
            cache.removeAll(keepingCapacity: true)
            cacheBorn = now
        }
        let key = DumpKey(family: host.family, sources: sources)
        let dump: Dump
        if !fresh, let recent = recentDump(key, now: now) {
            dump = recent
        } else if !fresh, !mayHaveConnections(now: now) {
            // No established connection in this namespace at all: nothing to walk the kernel's sockets for.
            dump = Dump(at: now, total: 0, telling: [])
            keep(dump, for: key, now: now)
        } else {
            switch takeDump(key, now: now, wait: wait) {
            case .success(let taken): dump = taken
            case .failure(let failure): return .failure(failure)
            }
        }
        guard !dump.telling.isEmpty else { return .success(TrafficSample(connections: dump.total)) }
        let hostRoute =
            route.map { RouteKey(interface: $0.interfaceIndex, gateway: $0.gateway) } ?? lookUpRoute(to: host)
        var receiving = Set<IPAddress>()
        var retransmitting = Set<IPAddress>()
        for connection in dump.telling {
            guard connection.remote == host || (hostRoute != nil && lookUpRoute(to: connection.remote) == hostRoute)
            else {
                continue
            }
            if connection.receivedRecently { receiving.insert(connection.remote) }
            if connection.retransmitting { retransmitting.insert(connection.remote) }
        }
        return .success(
            TrafficSample(
                connections: dump.total, receivingRemotes: receiving.count,
                retransmittingRemotes: retransmitting.count))
    }

    private func recentDump(_ key: DumpKey, now: Instant) -> Dump? {
        guard let dump = dumps[key], now &- dump.at < reusePeriod(total: dump.total) else { return nil }
        return dump
    }

    /// Walks the kernel's sockets for `key` (one walk: see `SocketDiag.establishedTCP`).
    private func takeDump(_ key: DumpKey, now: Instant, wait: Int32) -> Result<Dump, Failure> {
        let before = Self.threadCPU()
        dumpsTaken += 1
        defer { lastDumpCost = Self.threadCPU() &- before }
        var dump = Dump(at: now, total: 0, telling: [])
        sequence &+= 1
        guard
            let (request, filtered) = SocketDiag.establishedTCP(
                family: key.family, sources: key.sources,
                sequence: sequence)
        else { return .success(dump) }
        let sourceSet = filtered ? [] : Set(key.sources)
        let result = self.dump(request, wait: wait) { connection in
            guard filtered || sourceSet.contains(connection.local) else { return }
            dump.total += 1
            if connection.receivedRecently || connection.retransmitting { dump.telling.append(connection) }
        }
        if case .failure(let failure) = result { return .failure(failure) }
        keep(dump, for: key, now: now)
        return .success(dump)
    }

    private func keep(_ dump: Dump, for key: DumpKey, now: Instant) {
        if dumps.count >= Self.dumpLimit {
            dumps = dumps.filter { now &- $0.value.at < reusePeriod(total: $0.value.total) }
        }
        if dumps.count >= Self.dumpLimit { dumps.removeAll(keepingCapacity: true) }
        dumps[key] = dump
    }

    /// The kernel walks its whole table of TCP sockets for every dump (its size is the machine's, not the
    /// namespace's: a millisecond and more on a large machine), so a namespace with no established connection at
    /// all — `CurrEstab` of /proc/net/snmp, read at most once per `emptyReuse` — is not walked.
    private var establishedAt: (count: Int?, at: Instant)?

    private func mayHaveConnections(now: Instant) -> Bool {
        if let known = establishedAt, now &- known.at < Self.emptyReuse { return known.count != 0 }
        let count = Self.establishedConnections()
        establishedAt = (count, now)
        return count != 0
    }

    /// /proc/net/snmp's `Tcp: … CurrEstab …`: the connections established (or closing) in this namespace; nil when
    /// it cannot be read.
    static func establishedConnections() -> Int? {
        let fd = open("/proc/net/snmp", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return parseEstablished(buffer[..<count])
    }

    /// The `CurrEstab` value of the snmp text's two `Tcp:` lines (names, then values).
    static func parseEstablished(_ text: ArraySlice<UInt8>) -> Int? {
        let lines = text.split(separator: UInt8(ascii: "\n")).filter { $0.starts(with: Array("Tcp:".utf8)) }
        guard lines.count >= 2 else { return nil }
        let names = lines[0].split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        let values = lines[1].split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        guard let index = names.firstIndex(of: "CurrEstab"), index < values.count else { return nil }
        return Int(values[index])
    }

    func dump(_ request: [UInt8], wait: Int32, each: (SocketDiagReply.Connection) -> Void) -> Result<Void, Failure> {
        do throws(SystemError) { try diag.send(request) } catch { return .failure(.refused(error)) }
        var result = SocketDiagReply.Result()
        var reads = 0
        while !result.done && result.error == nil {
            reads += 1
            if reads > Self.readLimit { return .failure(.incomplete) }
            switch diag.receive() {
            case .datagram(let bytes):
                SocketDiagReply.parse(bytes, sequence: sequence, into: &result)
                result.connections.forEach(each)
                result.connections.removeAll(keepingCapacity: true)
            case .dropped:
                break // not the kernel's
            case .overrun:
                return .failure(.incomplete) // part of the dump is lost
            case .wouldBlock:
                var poller = pollfd(fd: diag.fd, events: Int16(POLLIN), revents: 0)
                guard wait > 0, poll(&poller, 1, wait) == 1, poller.revents & Int16(POLLIN) != 0 else {
                    return .failure(.incomplete)
                }
            }
        }
        if let error = result.error { return .failure(.refused(SystemError("sock_diag dump", errno: error))) }
        return .success(())
    }

    /// The CPU time (user and system) this thread has spent.
    static func threadCPU() -> Duration {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return .zero }
        return .seconds(max(time.tv_sec, 0)) + .nanoseconds(max(time.tv_nsec, 0))
    }

    /// The kernel's route to `address` (cached); nil when it has none.
    private func lookUpRoute(to address: IPAddress) -> RouteKey? {
        if let known = cache[address] { return known }
        sequence &+= 1
        let asked = sequence
        var found: RouteKey?
        if (try? routes.send(NetlinkRequest.routeLookup(to: address, sequence: asked))) != nil {
            // The kernel answers a lookup while it is being sent: the reply is already queued.
            reading: for _ in 0..<8 {
                guard case .datagram(let bytes) = routes.receive() else { break }
                for message in NetlinkParser.parse(bytes).messages {
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
