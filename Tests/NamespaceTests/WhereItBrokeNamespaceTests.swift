import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// Where it broke, end to end: the daemon in a client namespace behind a gateway and an upstream
/// router, the server past both; each fault made with nftables in the namespace it concerns. Blame,
/// the neighbour check's answer, history across restarts, and sleep from a mocked logind.
final class WhereItBrokeNamespaceTests: DaemonInNamespaceTestCase {
    var chain: RouterChain!
    var logind: MockService?
    var stateDirectory = ""
    override var alongside: [P] { [.connectivity, .blame, .neighbor4, .neighbor6, .reason] }

    override func setUpWithError() throws {
        try requireRoot()
        try requireTool("/usr/sbin/nft")
        chain = try RouterChain(tag: "wb")
        bus = try PrivateBus()
        stateDirectory = bus.directory + "/state"
    }

    override func tearDown() {
        logind?.stop()
        super.tearDown()
        chain = nil
    }

    func startDaemon(host: String = "198.18.2.2", _ extra: [String] = []) throws {
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "300", "--timeout", "300", "--failures", "3"] + extra,
            stateDirectory: stateDirectory, namespace: chain.client.name, host: host)
    }

    /// GetHistory(max) through busctl: (start, duration, blame, worst, reason) per outage, newest first.
    func history(
        _ max: Int = 100
    ) throws -> [(start: UInt64, duration: UInt64, blame: String, worst: String, reason: String)] {
        let out = try runCommand([
            "busctl", "--address=\(bus.address)", "--json=short", "call", MonitorContract.busName,
            MonitorContract.objectPath, MonitorContract.interface, "GetHistory", "u", "\(max)",
        ])
        XCTAssertEqual(out.status, 0, out.stderr)
        let document = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        let entries = ((document?["data"] as? [Any])?.first as? [[Any]]) ?? []
        return entries.map {
            (
                ($0[0] as? NSNumber)?.uint64Value ?? 0, ($0[1] as? NSNumber)?.uint64Value ?? 0, $0[2] as? String ?? "",
                $0[3] as? String ?? "", $0[4] as? String ?? ""
            )
        }
    }

    /// TimeInState through busctl.
    func timeInState() throws -> [String: UInt64] {
        let out = try runCommand([
            "busctl", "--address=\(bus.address)", "--json=short", "get-property", MonitorContract.busName,
            MonitorContract.objectPath, MonitorContract.interface, "TimeInState",
        ])
        let document = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        return ((document?["data"] as? [String: Any]) ?? [:]).compactMapValues { ($0 as? NSNumber)?.uint64Value }
    }

    func blamesSeen() -> [String] {
        (watcher?.propertyChanges ?? []).compactMap { $0["Blame"] as? String }
    }

    // MARK: Blame

    func testAGatewayThatIsGoneIsBlamedAndNamed() throws {
        try startDaemon()
        try wait(.connectivity, "full")
        try wait(.neighbor4, "reachable")
        XCTAssertEqual(try get(.gateway4), "198.18.0.1")
        XCTAssertEqual(try get(.blame), "")
        try chain.silenceGateway()
        try wait(.connectivity, "limited", timeout: 10)
        try wait(.blame, "gateway", timeout: 2)
        XCTAssertEqual(try get(.neighbor4), "unreachable")
        XCTAssertEqual(try get(.reason), "gateway 198.18.0.1 does not answer on \(chain.clientLink)")
        try chain.heal()
        try wait(.connectivity, "full", timeout: 10)
        XCTAssertEqual(try get(.blame), "", "no Blame while full")
    }

    /// A gateway that answers ARP but forwards nothing — ICMP filtering included — is never blamed.
    func testAGatewayThatAnswersItsNeighboursIsNeverBlamed() throws {
        try startDaemon()
        try wait(.connectivity, "full")
        watcher = try SignalWatcher(bus: bus)
        try chain.stopForwarding()
        try wait(.connectivity, "limited", timeout: 10)
        try wait(.blame, "upstream", timeout: 3)
        XCTAssertEqual(try get(.neighbor4), "reachable")
        XCTAssertFalse(blamesSeen().contains("gateway"), "\(blamesSeen())")
    }

    /// A gateway that drops ping but forwards the rest: the probes' TCP ladder hears the host, the neighbour
    /// check hears the gateway, and nothing is blamed.
    func testAGatewayFilteringICMPIsNoFault() throws {
        try startDaemon()
        try wait(.connectivity, "full")
        watcher = try SignalWatcher(bus: bus)
        try chain.dropPing()
        try wait(.probeMethod, "tcp", timeout: 10)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertEqual(try get(.blame), "")
        XCTAssertEqual(try get(.neighbor4), "reachable")
        XCTAssertFalse(blamesSeen().contains("gateway"), "\(blamesSeen())")
    }

    /// Past the gateway: a dead upstream router is `upstream`, a silent server behind a working path `host`.
    func testUpstreamAndHostAreToldApart() throws {
        try startDaemon()
        try wait(.connectivity, "full")
        try chain.silenceUpstream()
        try wait(.connectivity, "limited", timeout: 10)
        try wait(.blame, "upstream", timeout: 3)
        try chain.heal()
        try wait(.connectivity, "full", timeout: 10)
        try chain.silenceServer()
        try wait(.connectivity, "limited", timeout: 10)
        try wait(.blame, "host", timeout: 3)
        XCTAssertEqual(try get(.neighbor4), "reachable")
    }

    /// Host a name (dnsmasq on the server): its lookups failing while its address answers is `dns`.
    func testAResolverThatStopsAnsweringIsBlamed() throws {
        try chain.client.useNames(
            hosts: "127.0.0.1 localhost\n", resolvConf: "nameserver 198.18.2.2\noptions timeout:1 attempts:1\n")
        defer { chain.client.forgetNames() }
        let pidFile = bus.directory + "/dnsmasq.pid"
        try sh(
            "ip netns exec \(chain.server.name) dnsmasq --no-resolv --no-hosts --listen-address=198.18.2.2 --bind-interfaces "
                + "--user=root --pid-file=\(pidFile) --address=/far.test/198.18.2.2")
        defer {
            if let pid = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap({
                Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }) {
                kill(pid, SIGKILL)
            }
        }
        try startDaemon(host: "far.test", ["--dns-refresh", "1"])
        try wait(.connectivity, "full")
        _ = try chain.server.exec(
            "nft 'add table inet dns; add chain inet dns in { type filter hook input priority 0 ; }; "
                + "add rule inet dns in udp dport 53 drop'")
        try wait(.connectivity, "limited", timeout: 10)
        XCTAssertEqual(try get(.blame), "dns")
        _ = try chain.server.exec("nft delete table inet dns")
        try wait(.connectivity, "full", timeout: 10)
        XCTAssertEqual(try get(.blame), "")
    }

    func testALinkDownIsBlamedWithTheChange() throws {
        try startDaemon()
        try wait(.connectivity, "full")
        watcher = try SignalWatcher(bus: bus)
        try chain.client.ip("link set \(chain.clientLink) down")
        try wait(.connectivity, "none", timeout: 5)
        XCTAssertEqual(try get(.blame), "link")
        let change = watcher?.propertyChanges.first { ($0["Connectivity"] as? String) == "none" }
        XCTAssertEqual(change?["Blame"] as? String, "link", "Blame `link` rides with the Connectivity change")
        XCTAssertEqual(try get(.neighbor4), "", "no route: no next hop to ask")
    }

    func testAnIPv6GatewayIsAskedWithANeighborSolicitation() throws {
        try startDaemon(host: "fd00:2::2")
        try wait(.connectivity, "full")
        try wait(.neighbor6, "reachable")
        XCTAssertEqual(try get(.gateway6), "fd00::1")
        try chain.silenceGateway()
        try wait(.connectivity, "limited", timeout: 10)
        try wait(.blame, "gateway", timeout: 2)
        XCTAssertEqual(try get(.neighbor6), "unreachable")
    }

    /// The neighbour check asks the gateway at the link-layer address the kernel knows for it, at most 3
    /// times per suspicion (the kernel's own ARP requests carry no target hardware address).
    func testTheNeighbourCheckIsUnicastToTheGatewaysKnownAddress() throws {
        let link = String(chain.clientLink.dropLast(2)) + "g0"
        _ = try chain.gateway.exec(
            "nft 'add table netdev census; add counter netdev census ours; "
                + "add chain netdev census count { type filter hook ingress device \(link) priority -600 ; }'")
        _ = try chain.gateway.exec(
            "nft 'add rule netdev census count arp operation request arp daddr ether != 00:00:00:00:00:00 "
                + "counter name ours'")
        try startDaemon()
        try wait(.connectivity, "full")
        let before = try oursCounted()
        try chain.silenceServer()
        try wait(.blame, "host", timeout: 10)
        let sent = try oursCounted() - before
        XCTAssertGreaterThanOrEqual(sent, 1, "unicast, to the address the neighbour table keeps")
        XCTAssertLessThanOrEqual(sent, 3, "3 tries at most per suspicion")
    }

    func oursCounted() throws -> Int {
        let text = try chain.gateway.exec("nft list counter netdev census ours")
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard let index = words.firstIndex(of: "packets"), index + 1 < words.count, let value = Int(words[index + 1])
        else { return -1 }
        return value
    }

    // MARK: History

    func testAnOutageIsSignalledKeptAcrossARestartAndCounted() throws {
        try startDaemon()
        watcher = try SignalWatcher(bus: bus)
        try wait(.connectivity, "full")
        try chain.silenceServer()
        try wait(.blame, "host", timeout: 10)
        sleep(1)
        try chain.heal()
        try wait(.connectivity, "full", timeout: 10)
        for _ in 0..<100 where watcher?.outages.isEmpty != false { usleep(20_000) }
        let signalled = try XCTUnwrap(watcher?.outages.first)
        XCTAssertEqual(signalled.blame, "host")
        XCTAssertEqual(watcher?.outages.count, 1, "once per outage")
        let kept = try history()
        XCTAssertEqual(kept.count, 1)
        XCTAssertEqual(kept.first?.blame, "host")
        XCTAssertEqual(kept.first?.worst, "limited")
        XCTAssertEqual(kept.first?.start, signalled.start)
        XCTAssertGreaterThan(kept.first?.duration ?? 0, 1_000_000)
        XCTAssertFalse(kept.first?.reason.isEmpty ?? true)

        // The client reads the same.
        let text = try runCommand([Paths.client, "--address", bus.address, "history"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("  host  limited  "), text.stdout)
        XCTAssertTrue(text.stdout.contains("% of the time awake"), text.stdout)

        daemon?.stop()
        try startDaemon()
        try wait(.connectivity, "full")
        XCTAssertEqual(try history().map(\.start), kept.map(\.start), "the history outlives a restart")
        let times = try timeInState()
        XCTAssertEqual(Set(times.keys), ["unknown", "none", "portal", "limited", "full", "asleep"])
        XCTAssertGreaterThanOrEqual(times["limited"] ?? 0, 1)
    }

    func testACorruptHistoryIsSetAsideAndHistoryStartsAfresh() throws {
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        let path = stateDirectory + "/history"
        try "netobserver-history 1\nbegan 1\noutage x\n".write(toFile: path, atomically: true, encoding: .utf8)
        try startDaemon()
        try wait(.connectivity, "full")
        XCTAssertTrue(FileManager.default.fileExists(atPath: path + ".corrupt"), daemon?.log ?? "")
        XCTAssertTrue(daemon?.log.contains("history starts afresh") == true, daemon?.log ?? "")
        XCTAssertEqual(try history().count, 0)
        // An oversized one too, and a link is never followed.
        daemon?.stop()
        try Data(count: 2 * 1024 * 1024).write(to: URL(fileURLWithPath: path))
        try startDaemon()
        try wait(.connectivity, "full")
        XCTAssertEqual(try history().count, 0)
        XCTAssertEqual(daemon?.process.isRunning, true)
    }

    // MARK: Sleep

    func testSleepIsNotAnOutage() throws {
        logind = try MockService(bus: bus, name: "org.freedesktop.login1", arguments: ["-t", "logind"])
        try startDaemon()
        try wait(.connectivity, "full")
        try daemon?.waitUntil("modems and metered links: first view complete")
        watcher = try SignalWatcher(bus: bus)
        for _ in 0..<3 {
            try prepareForSleep(true)
            try daemon?.waitUntil("logind: the machine is going to sleep")
            // The upstream dies while the machine sleeps, and is back before it wakes.
            try chain.silenceUpstream()
            sleep(2)
            try chain.heal()
            try prepareForSleep(false)
            try wait(.connectivity, "full")
            sleep(1)
        }
        XCTAssertEqual(try history().count, 0, "no outage spans a sleep")
        XCTAssertFalse(
            (watcher?.propertyChanges ?? []).contains { ($0["Connectivity"] as? String).map { $0 != "full" } ?? false },
            "Connectivity never left full")
        XCTAssertGreaterThanOrEqual(try timeInState()["asleep"] ?? 0, 5, "three sleeps of 2 s or more")
    }

    func prepareForSleep(_ start: Bool) throws {
        try logind?.call(
            "/org/freedesktop/login1", "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
            ["org.freedesktop.login1.Manager", "PrepareForSleep", "b", "1", "b", start ? "true" : "false"])
    }
}
