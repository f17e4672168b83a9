@testable import Reachability
import TestTime
import Timekeeping
@testable import TrafficCensus
import CLinux
import EventLoop
import Glibc
import IntegrationSupport
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import XCTest

/// sock_diag against this machine's kernel (no root: loopback connections), and its parser against
/// every truncation.
final class ConnectionSamplingTests: XCTestCase {
    func testTheKernelCountsOurLoopbackConnections() throws {
        let census = try ConnectionCensus()
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        let before = try census.sample(host: loopback, sources: [loopback], now: 0, wait: 100).get()
        let connections = try LoopbackConnections(count: 3)
        connections.exchange()
        // 10 s on: a dump that found nothing serves a second.
        let sample = try census.sample(host: loopback, sources: [loopback], now: 10_000_000_000, wait: 100).get()
        // Both ends of each connection have 127.0.0.1 as their source; every remote is the host itself.
        XCTAssertGreaterThanOrEqual(sample.connections - before.connections, 6)
        XCTAssertEqual(sample.receivingRemotes, 1, "one remote (127.0.0.1), however many connections")
        XCTAssertEqual(sample.retransmittingRemotes, 0)
        XCTAssertEqual(sample.traffic, .flowing)
        // Filtered in the kernel by source: another source address sees none of them.
        let other = try XCTUnwrap(IPAddress("127.0.0.2"))
        let filtered = try census.sample(host: loopback, sources: [other], now: 20_000_000_000, wait: 100).get()
        XCTAssertEqual(filtered.receivingRemotes, 0)
        XCTAssertLessThan(filtered.connections, sample.connections)
        // No source of the host's family: nothing is asked.
        XCTAssertEqual(
            try census.sample(
                host: loopback, sources: [try XCTUnwrap(IPAddress("::1"))], now: 30_000_000_000, wait: 100
            ).get(), TrafficSample())
        withExtendedLifetime(connections) {}
    }

    /// Host's route as the route core knows it decides what is routed like Host: the census asks the kernel only
    /// for the remotes' routes. Loopback connections count for a Host the route core says goes over `lo`.
    func testTheRouteCoresWordOnHostsRouteDecidesWhatIsRoutedLikeIt() throws {
        let census = try ConnectionCensus()
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        // An address with no connection of ours, and whatever route this machine has to it.
        let host = try XCTUnwrap(IPAddress("198.18.77.7"))
        let connections = try LoopbackConnections(count: 2)
        connections.exchange()
        let overLoopback = HostRoute(interfaceIndex: Int32(if_nametoindex("lo")), gateway: nil)
        let routedLikeLoopback = try census.sample(
            host: host, route: overLoopback, sources: [loopback], now: 1_000 * ms, wait: 100
        ).get()
        XCTAssertEqual(routedLikeLoopback.receivingRemotes, 1, "127.0.0.1's route is lo's, as Host's is said to be")
        let elsewhere = HostRoute(interfaceIndex: Int32(if_nametoindex("lo")), gateway: .v4([198, 18, 77, 1]))
        let routedElsewhere = try census.sample(
            host: host, route: elsewhere, sources: [loopback], now: 1_100 * ms, wait: 100
        ).get()
        XCTAssertEqual(routedElsewhere.receivingRemotes, 0, "through a next hop: not routed like the loopback remotes")
        withExtendedLifetime(connections) {}
    }

    /// Several targets on one interface share a dump taken within 250 ms (or 125 × what a dump costs): the kernel walks
    /// the sockets once per period, whatever the number of targets.
    func testTargetsOnOneInterfaceShareARecentDump() throws {
        let census = try ConnectionCensus()
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        let other = try XCTUnwrap(IPAddress("127.0.0.9"))
        let first = try census.sample(host: loopback, sources: [loopback], now: 1_000_000_000, wait: 100).get()
        let connections = try LoopbackConnections(count: 2)
        connections.exchange()
        let shared = try census.sample(host: other, sources: [loopback], now: 1_100_000_000, wait: 100).get()
        XCTAssertEqual(shared.connections, first.connections, "another target 100 ms later: the same dump")
        XCTAssertGreaterThanOrEqual(census.reuse, 250_000_000)
        let period = census.reusePeriod(total: first.connections)
        let fresh = try census.sample(host: loopback, sources: [loopback], now: 1_000_000_000 + period, wait: 100).get()
        XCTAssertGreaterThanOrEqual(
            fresh.connections - first.connections, 4, "the reuse period on (250 ms or 125 × a dump's cost): a new dump")
        XCTAssertEqual(fresh.receivingRemotes, 1)
        withExtendedLifetime(connections) {}
    }

    /// However many targets sample through one interface, the kernel's sockets are walked at most once per 125 × what
    /// the last walk cost (250 ms at least): with 18,000 sockets a walk costs about 33 ms, so eight targets sampling every
    /// 500 ms cost 6 % of a core when each walked for itself (a reuse of 250 ms). Here a dear walk is pretended.
    func testADearDumpIsSharedForLongerWhateverTheNumberOfTargets() throws {
        let census = try ConnectionCensus()
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        let connections = try LoopbackConnections(count: 1)
        defer { withExtendedLifetime(connections) {} }
        _ = try census.sample(host: loopback, sources: [loopback], now: 1_000 * ms, wait: 100).get()
        XCTAssertEqual(census.dumpsTaken, 1)
        census.lastDumpCost = 10 * ms
        XCTAssertEqual(census.reuse, 1_250 * ms)
        for step in UInt64(1)...12 {
            for target in 0..<8 {
                let host = try XCTUnwrap(IPAddress("198.18.3.\(target + 1)"))
                _ = try census.sample(host: host, sources: [loopback], now: 1_000 * ms + step * 100 * ms, wait: 100)
                    .get()
            }
        }
        XCTAssertEqual(census.dumpsTaken, 1, "96 samples of 8 targets within the period: one walk")
        XCTAssertTrue(
            census.needsDearDump(host: loopback, sources: [loopback], now: 2_300 * ms),
            "past the period a dear walk is due")
        XCTAssertFalse(census.needsDearDump(host: loopback, sources: [loopback], now: 2_200 * ms))
        _ = try census.sample(host: loopback, sources: [loopback], now: 2_300 * ms, wait: 100).get()
        XCTAssertEqual(census.dumpsTaken, 2)
    }

    /// A dump that found no connection serves every target for a second: 64 targets probing every second (each
    /// sampling at its probe) walked the kernel's sockets four times a second for nothing.
    func testAnEmptyDumpServesEveryTargetForASecond() throws {
        // Some connection in the namespace, or no walk is taken at all (see the next test).
        let connections = try LoopbackConnections(count: 1)
        defer { withExtendedLifetime(connections) {} }
        let census = try ConnectionCensus()
        let nobody = try XCTUnwrap(IPAddress("198.18.9.9"))
        let empty = try census.sample(host: nobody, sources: [nobody], now: 1_000 * ms, wait: 100).get()
        XCTAssertEqual(empty.connections, 0, "no socket has that source")
        for target in UInt64(0)..<64 {
            let host = try XCTUnwrap(IPAddress("198.18.3.\(target + 1)"))
            _ = try census.sample(host: host, sources: [nobody], now: 1_000 * ms + target * 15 * ms, wait: 100).get()
        }
        XCTAssertEqual(census.dumpsTaken, 1, "64 targets' samples within a second: one walk")
        _ = try census.sample(host: nobody, sources: [nobody], now: 2_000 * ms, wait: 100).get()
        XCTAssertEqual(census.dumpsTaken, 2, "a second on: connections that started meanwhile are seen")
    }

    /// Issue 45 item 5: the kernel walks its whole TCP table for every dump (a millisecond and more on a large machine,
    /// whatever the namespace holds), a fifth of the daemon's CPU with 64 targets and no connection. A namespace with
    /// no established connection (/proc/net/snmp's CurrEstab) is not walked; the count is read as the kernel writes it.
    func testCurrEstabIsReadFromTheSnmpTable() throws {
        let text =
            "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails "
            + "EstabResets CurrEstab InSegs OutSegs\nTcp: 1 200 120000 -1 97 86 2 18 7 2266 1587\nUdp: InDatagrams\nUdp: 5\n"
        XCTAssertEqual(ConnectionCensus.parseEstablished(Array(text.utf8)[...]), 7)
        XCTAssertNil(ConnectionCensus.parseEstablished(Array("Tcp: CurrEstab\n".utf8)[...]), "no values line")
        XCTAssertNil(ConnectionCensus.parseEstablished(Array("Tcp: A B\nTcp: 1 2\n".utf8)[...]), "no CurrEstab")
        XCTAssertNil(ConnectionCensus.parseEstablished([][...]))
        let connections = try LoopbackConnections(count: 1)
        defer { withExtendedLifetime(connections) {} }
        XCTAssertGreaterThanOrEqual(
            ConnectionCensus.establishedConnections() ?? 0, 2, "this namespace's own, both ends")
    }

    /// Dual-stack programs talk IPv4 through IPv6 sockets (v4-mapped addresses): their connections count too.
    func testIPv4ConnectionsOfDualStackSocketsCount() throws {
        let census = try ConnectionCensus()
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        let listener = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        var off: Int32 = 0
        _ = setsockopt(listener, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        withUnsafeMutableBytes(of: &address.sin6_addr) {
            $0.copyBytes(from: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 1])
        }
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let client = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
                    && connect(client, $0, length) == 0
            }
        }
        let server = accept(listener, nil, nil)
        defer { for fd in [listener, client, server] { close(fd) } }
        XCTAssertTrue(connected && server >= 0)
        _ = send(client, "ping", 4, 0)
        var buffer = [UInt8](repeating: 0, count: 16)
        _ = recv(server, &buffer, 16, 0)
        let sample = try census.sample(host: loopback, sources: [loopback], now: 0, wait: 100).get()
        XCTAssertGreaterThanOrEqual(sample.connections, 2, "both ends, IPv6 sockets with the IPv4 source")
        XCTAssertEqual(sample.receivingRemotes, 1, "the remote ::ffff:127.0.0.1 is Host 127.0.0.1")
    }

    func testTheSamplerAnswersOnTheLoopAndOffIt() throws {
        let loop = try MainLoop()
        let sampler = try TrafficSampler(loop: loop)
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        let connections = try LoopbackConnections(count: 2)
        connections.exchange()
        let now = try XCTUnwrap(sampler.sampleNow(host: loopback, sources: [loopback]))
        XCTAssertEqual(now.sample?.receivingRemotes, 1)
        XCTAssertGreaterThan(now.cost, 0, "the CPU a sample took is measured")
        var later: TrafficSample?
        sampler.sampleLater(host: loopback, sources: [loopback]) { sample, _ in later = sample }
        XCTAssertNil(
            sampler.sampleNow(host: loopback, sources: [loopback]), "one on the thread: none on the loop meanwhile")
        let deadline = MonotonicClock.now() + 5_000_000_000
        while later == nil && MonotonicClock.now() < deadline { loop.runTurn(waitingAtMost: 100) }
        XCTAssertEqual(later?.receivingRemotes, 1)
        withExtendedLifetime(connections) {}
    }

    func testTheRequestFiltersByStateAndSource() throws {
        let sources = try ["198.18.0.5", "198.18.0.6", "fd00::5"].map { try XCTUnwrap(IPAddress($0)) }
        let (request, filtered) = try XCTUnwrap(
            SocketDiag.establishedTCP(family: AF_INET, sources: sources, sequence: 9))
        XCTAssertTrue(filtered)
        // nlmsghdr 16 + inet_diag_req 60 (IPv4: one walk for both socket families) + rtattr 4 + two S_CONDs of
        // 4 + 8 + 4 bytes with a JMP between them.
        XCTAssertEqual(request.count, 16 + 60 + 4 + 2 * 16 + 4)
        XCTAssertEqual(UInt16(request[4]) | UInt16(request[5]) << 8, CLinux_TCPDIAG_GETSOCK)
        let filter = Array(request[(16 + 60 + 4)...])
        XCTAssertEqual(
            Array(filter[0..<4]), [CLinux_INET_DIAG_BC_S_COND, 16, 20, 0],
            "a match falls through to the JMP, a miss skips it")
        XCTAssertEqual(Array(filter[16..<20]), [CLinux_INET_DIAG_BC_JMP, 4, 20, 0], "the JMP goes to the end (accept)")
        XCTAssertEqual(
            Array(filter[20..<24]), [CLinux_INET_DIAG_BC_S_COND, 16, 20, 0], "the last miss jumps past the end (reject)"
        )
        XCTAssertNil(SocketDiag.establishedTCP(family: AF_INET6, sources: [sources[0]], sequence: 9))
        let many = (1...200).compactMap { IPAddress("198.18.1.\($0)") }
        let unfiltered = try XCTUnwrap(SocketDiag.establishedTCP(family: AF_INET, sources: many, sequence: 9))
        XCTAssertFalse(unfiltered.filtered, "more than the filter carries: the census filters by source itself")
        XCTAssertEqual(unfiltered.request.count, 16 + 60)
        let six = try XCTUnwrap(SocketDiag.establishedTCP(family: AF_INET6, sources: [sources[2]], sequence: 9))
        XCTAssertEqual(six.request.count, 16 + 56 + 4 + 4 + 8 + 16, "IPv6: SOCK_DIAG_BY_FAMILY with inet_diag_req_v2")
        XCTAssertEqual(UInt16(six.request[4]) | UInt16(six.request[5]) << 8, CLinux_SOCK_DIAG_BY_FAMILY)
    }

    /// The kernel audits the filter and refuses (EINVAL) one whose jumps leave its chain of matches: an interface
    /// with several addresses (every IPv6 one has a link-local and a global) must still be sampled.
    func testTheKernelAcceptsTheFilterForManyAddresses() throws {
        let census = try ConnectionCensus()
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        let connections = try LoopbackConnections(count: 2)
        connections.exchange()
        var now: Instant = 1 * second
        for count in [1, 2, 3, 8, SocketDiag.maxSources, SocketDiag.maxSources + 1, 300] {
            let others = (0..<(count - 1)).compactMap { IPAddress("198.18.\(1 + $0 / 250).\(1 + $0 % 250)") }
            now += 1 * second
            let sample = try census.sample(host: loopback, sources: others + [loopback], now: now, wait: 100).get()
            XCTAssertGreaterThanOrEqual(sample.connections, 4, "\(count) source addresses")
            XCTAssertEqual(sample.receivingRemotes, 1, "\(count) source addresses")
            now += 1 * second
            let elsewhere = try census.sample(
                host: loopback, sources: others + [try XCTUnwrap(IPAddress("127.0.0.2"))], now: now,
                wait: 100
            ).get()
            XCTAssertEqual(elsewhere.receivingRemotes, 0, "\(count) other addresses see none of them")
        }
        let six = try ["fe80::1", "fd00::1", "2001:db8::1", "::1"].map { try XCTUnwrap(IPAddress($0)) }
        XCTAssertNoThrow(
            try census.sample(host: six[3], sources: six, now: now + 1 * second, wait: 100).get(),
            "an IPv6 interface's link-local and global addresses")
        withExtendedLifetime(connections) {}
    }

    /// A sample the kernel refuses is said in the log and counted, never a silent `idle`: here the layout the kernel's
    /// audit refused (every match jumping straight to the end), and what the sampler makes of such a refusal.
    func testAFailedSampleIsLoggedAndCounted() throws {
        let census = try ConnectionCensus()
        let sources = try ["127.0.0.1", "127.0.0.2"].map { try XCTUnwrap(IPAddress($0)) }
        var condition = inet_diag_hostcond()
        condition.family = UInt8(AF_INET)
        condition.prefix_len = 32
        condition.port = -1
        let hostcond = withUnsafeBytes(of: condition) { Array($0) }
        let oldLayout =
            [CLinux_INET_DIAG_BC_S_COND, 32, 16, 0] + hostcond + sources[0].bytes
            + [CLinux_INET_DIAG_BC_S_COND, 16, 20, 0] + hostcond + sources[1].bytes
        var body = inet_diag_req_v2()
        body.sdiag_family = UInt8(AF_INET)
        body.sdiag_protocol = UInt8(IPPROTO_TCP)
        body.idiag_states = 1 << 1
        let request = NetlinkRequest.message(
            type: Int32(CLinux_SOCK_DIAG_BY_FAMILY), flags: NLM_F_REQUEST | NLM_F_DUMP,
            sequence: census.sequence, body: body,
            attributes: [(CLinux_INET_DIAG_REQ_BYTECODE, oldLayout)])
        let refused = census.dump(request, wait: 100) { _ in }
        guard case .failure(.refused(let error)) = refused else {
            return XCTFail("the kernel took the old layout: \(refused)")
        }
        XCTAssertEqual(error.errno, EINVAL)

        let loop = try MainLoop()
        final class Lines { var lines: [String] = [] }
        let logged = Lines()
        let sampler = try TrafficSampler(loop: loop, log: { logged.lines.append($0) })
        XCTAssertNil(sampler.counted(.failure(.refused(error))))
        XCTAssertNil(sampler.counted(.failure(.refused(error))))
        XCTAssertEqual(sampler.failures, 2, "every failure counted")
        XCTAssertEqual(logged.lines.count, 1, "the same failure again within a minute: no second line")
        XCTAssertTrue(logged.lines.first?.contains("Invalid argument") == true, logged.lines.first ?? "")
        XCTAssertNil(sampler.counted(.failure(.incomplete)))
        XCTAssertEqual(logged.lines.count, 2, "another kind of failure: said at once")
        XCTAssertEqual(sampler.counted(.success(TrafficSample(connections: 1))), TrafficSample(connections: 1))
        XCTAssertEqual(sampler.failures, 3)
    }

    /// A reply as the kernel sends it, cut at every length: never a trap, never a connection made up.
    func testEveryTruncationIsSafe() throws {
        var message = inet_diag_msg()
        message.idiag_family = UInt8(AF_INET)
        message.idiag_state = 1
        withUnsafeMutableBytes(of: &message.id.idiag_dst) { $0.copyBytes(from: [198, 18, 0, 2]) }
        var info = [UInt8](repeating: 0, count: 232)
        info[2] = 1 // tcpi_retransmits
        info[52] = 0xE8; info[53] = 0x03 // tcpi_last_data_recv = 1000 ms
        let body = withUnsafeBytes(of: message) { Array($0) } + NetlinkRequest.encode([(CLinux_INET_DIAG_INFO, info)])
        var header = nlmsghdr()
        header.nlmsg_len = UInt32(16 + body.count)
        header.nlmsg_type = CLinux_SOCK_DIAG_BY_FAMILY
        header.nlmsg_seq = 4
        let whole = withUnsafeBytes(of: header) { Array($0) } + body
        func parse(_ bytes: [UInt8], sequence: UInt32 = 4) -> SocketDiagReply.Result {
            var result = SocketDiagReply.Result()
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
            defer { buffer.deallocate() }
            buffer.copyBytes(from: bytes)
            SocketDiagReply.parse(
                UnsafeRawBufferPointer(rebasing: buffer[..<bytes.count]), sequence: sequence, into: &result)
            return result
        }
        let parsed = parse(whole)
        XCTAssertEqual(
            parsed.connections,
            [
                SocketDiagReply.Connection(
                    local: try XCTUnwrap(IPAddress("0.0.0.0")),
                    remote: try XCTUnwrap(IPAddress("198.18.0.2")),
                    retransmitting: true, receivedRecently: false)
            ])
        XCTAssertTrue(parse(whole, sequence: 5).connections.isEmpty, "another request's answer is not ours")
        for cut in 0..<whole.count {
            var bytes = Array(whole[..<cut])
            if cut >= 4 { bytes.replaceSubrange(0..<4, with: withUnsafeBytes(of: UInt32(cut)) { Array($0) }) }
            let result = parse(bytes)
            XCTAssertTrue(result.connections.isEmpty, "cut at \(cut)")
        }
    }
}
