import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import TestTime
import Timekeeping
import XCTest

/// Every path (INTERFACE.md "Every path: one verdict per address family"), end to end: a client
/// and a server with addresses from 2001:db8::/32 and 198.18.0.0/15, so that the resolver lists
/// IPv6 first as on most real networks, and `dual.test` naming both. The router drops one family
/// and then the other; the headline must read what applications live by.
final class DualStackNamespaceTests: DaemonInNamespaceTestCase {
    override var alongside: [P] { [.reason, .reason4, .reason6] }

    override func setUpWithError() throws {
        try requireRoot()
        hosts = try ThreeHosts(tag: "ds")
        try hosts.client.ip("-6 addr add 2001:db8:1::2/64 dev \(hosts.clientLink) nodad")
        try hosts.router.ip("-6 addr add 2001:db8:1::1/64 dev dsr0 nodad")
        try hosts.router.ip("-6 addr add 2001:db8:2::1/64 dev dsr1 nodad")
        try hosts.server.ip("-6 addr add 2001:db8:2::2/64 dev dss0 nodad")
        try hosts.client.useNames(
            hosts: "127.0.0.1 localhost\n2001:db8:2::2 dual.test\n198.18.2.2 dual.test\n"
                + "2001:db8:2::2 check.test\n198.18.2.2 check.test\n",
            resolvConf: "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        bus = try PrivateBus()
    }

    func startDaemon(_ extra: [String] = []) throws {
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200", "--timeout", "200"] + extra,
            namespace: hosts.client.name, host: "dual.test")
    }

    func router(_ command: String) throws { _ = try hosts.router.exec(command) }

    /// Both families full, IPv6 giving the headline (listed first, as on a real dual-stack network).
    func startBothFull() throws {
        try startDaemon()
        try wait(.connectivity, "full")
        try wait(.connectivity6, "full")
        try wait(.connectivity4, "full")
        XCTAssertEqual(try get(.address), "2001:db8:2::2", "the resolver lists IPv6 first")
        XCTAssertEqual(try get(.address4), "198.18.2.2")
        XCTAssertEqual(try get(.address6), "2001:db8:2::2")
        watcher = try SignalWatcher(bus: bus)
    }

    /// The values one property took in PropertiesChanged since the watcher started.
    func changes(of property: P) -> [String] {
        (watcher?.propertyChanges ?? []).compactMap { $0[property.name] as? String }
    }

    /// The most common dual-stack failure: the IPv6 upstream dies while IPv4 works. The headline
    /// stays full (over IPv4, as every browser then is), no StatusChanged; IPv6 alone says limited.
    func testADeadIPv6PathNeverReadsAsOffline() throws {
        try startBothFull()
        try router("ip6tables -I FORWARD -j DROP")
        try wait(.connectivity6, "limited")
        try wait(.address, "198.18.2.2")
        let reason6 = try get(.reason6)
        XCTAssertTrue(reason6.hasPrefix("host not answering over IPv6"), reason6)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertEqual(try get(.status), "ethernet")
        XCTAssertEqual(try get(.reason), "")
        XCTAssertEqual(try get(.connectivity4), "full")
        usleep(500_000)
        XCTAssertEqual(watcher?.statuses.count, 0, "StatusChanged: \(watcher?.statuses ?? [])")
        XCTAssertEqual(changes(of: .connectivity), [], "Connectivity moved")

        try router("ip6tables -D FORWARD -j DROP")
        try wait(.connectivity6, "full")
        try wait(.address, "2001:db8:2::2")
        XCTAssertEqual(watcher?.statuses.count, 0)
    }

    /// Gateway4 and Gateway6 are the next hops of each family's route to Host; an on-link Host has none.
    func testTheGatewaysAreTheRoutesNextHops() throws {
        try startBothFull()
        XCTAssertEqual(try get(.gateway4), "198.18.0.1")
        XCTAssertEqual(try get(.gateway6), "fd00::1")
        try wait(.neighbor4, "reachable")
        try wait(.neighbor6, "reachable")
        let screen = try runCommand([Paths.client, "--address", bus.address, "status"]).stdout
        XCTAssertTrue(screen.contains("Gateway:      198.18.0.1 (IPv4, reachable), fd00::1 (IPv6, reachable)"), screen)
        _ = try runCommand([
            "busctl", "--address=\(bus.address)", "set-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.interface, "Host", "s", "198.18.0.1",
        ])
        try wait(.connectivity, "full")
        try wait(.gateway4, "")
        XCTAssertEqual(try get(.gateway6), "", "an IPv4 literal has no IPv6 path")
    }

    /// The opposite: IPv4 dies behind a working IPv6 path; it is seen, and the headline does not move.
    func testADeadIPv4PathIsSeenBehindAWorkingIPv6One() throws {
        try startBothFull()
        try router("iptables -I FORWARD -j DROP")
        // IPv4 is probed rarely while both are full: its next probe is at most 30 s away.
        try wait(.connectivity4, "limited", timeout: 35)
        let reason4 = try get(.reason4)
        XCTAssertTrue(reason4.hasPrefix("host not answering over IPv4"), reason4)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertEqual(try get(.address), "2001:db8:2::2")
        XCTAssertEqual(watcher?.statuses.count, 0, "StatusChanged: \(watcher?.statuses ?? [])")
        XCTAssertEqual(changes(of: .connectivity), [])
    }

    /// No IPv6 route at all: IPv6 is none (the network said so), never limited.
    func testNoIPv6RouteIsNoneNotLimited() throws {
        try startBothFull()
        try hosts.client.ip("-6 route del default")
        try wait(.connectivity6, "none")
        let reason6 = try get(.reason6)
        XCTAssertTrue(reason6.contains("no route") || reason6.contains("unreachable"), reason6)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertFalse(changes(of: .connectivity6).contains("limited"), "\(changes(of: .connectivity6))")
        XCTAssertEqual(watcher?.statuses.count, 0)
    }

    /// Both families dead: the outage is confirmed as fast as with one family ((2 − 1) × 200 + 200 ms
    /// after the first unanswered probe, here allowing for busctl's polling).
    func testADeadUpstreamForEveryFamilyIsConfirmed() throws {
        try startBothFull()
        let start = Date()
        try router("iptables -I FORWARD -j DROP")
        try router("ip6tables -I FORWARD -j DROP")
        try wait(.status, "none", timeout: 5)
        let took = Date().timeIntervalSince(start)
        XCTAssertEqual(try get(.connectivity), "limited")
        XCTAssertEqual(try get(.connectivity4), "limited")
        XCTAssertEqual(try get(.connectivity6), "limited")
        XCTAssertLessThan(took, 2.0, "confirmed after \(took) s")
        XCTAssertEqual(watcher?.statuses.map(\.status), ["none"])
    }

    /// IPv6 blackholed and restored again and again: not one headline transition.
    func testAFlappingIPv6PathMovesNoHeadline() throws {
        try startBothFull()
        for _ in 0..<4 {
            try router("ip6tables -I FORWARD -j DROP")
            try wait(.connectivity6, "limited")
            try router("ip6tables -D FORWARD -j DROP")
            try wait(.connectivity6, "full")
        }
        XCTAssertEqual(watcher?.statuses.count, 0, "StatusChanged: \(watcher?.statuses ?? [])")
        XCTAssertEqual(changes(of: .connectivity), [])
    }

    /// AddressFamily ipv4 watches IPv4 alone: IPv6 is none, saying why, and nothing is sent in it.
    func testAddressFamilyIPv4LeavesIPv6Alone() throws {
        try startDaemon(["--family", "ipv4"])
        try wait(.connectivity, "full")
        XCTAssertEqual(try get(.address), "198.18.2.2")
        XCTAssertEqual(try get(.connectivity6), "none")
        XCTAssertEqual(try get(.reason6), "AddressFamily is ipv4")
        XCTAssertEqual(try get(.address6), "")
    }

    /// A portal that catches only IPv4 (the router sends IPv4 port 80 to its own portal), while IPv6
    /// goes through: IPv4 is `portal`, IPv6 `full`, and so is the headline.
    func testAPortalCatchingOnlyIPv4LeavesTheHeadlineFull() throws {
        try checkServer(in: hosts.server, "198.18.2.2", 80, "204")
        try checkServer(in: hosts.server, "2001:db8:2::2", 80, "204")
        try checkServer(in: hosts.router, "198.18.0.1", 8080, "302", location: "http://198.18.0.1:8080/login")
        try hosts.closePortal(droppingTheRest: false)
        try startDaemon(["--check-url", "http://check.test/generate_204"])
        try wait(.connectivity6, "full", timeout: 8)
        try wait(.connectivity4, "portal", timeout: 8)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertEqual(try get(.address), "2001:db8:2::2")
        XCTAssertEqual(try get(.portalURL), "", "the headline is not a portal")
    }
}
