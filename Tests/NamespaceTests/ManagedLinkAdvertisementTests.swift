import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// Issue 54 items 1–4 and 7, as NetworkManager and systemd-networkd run a link: the kernel ignores router
/// advertisements (`accept_ra` 0), the manager reads them and installs the default route through the router's
/// link-local address only after the advertisement that implies it, replaces that route (delete, then add) when
/// the router's preference changes, and merges two routers into one multipath route. The manager's steps are done
/// here with `ip`, in the order and within the time the managers take them.
final class ManagedLinkAdvertisementTests: DaemonInNamespaceTestCase {
    override var alongside: [P] { [.reason, .nat64Prefix, .portalAPI] }
    var routerLinkLocal = ""
    var routerLink: String { hosts.routerClientLink }

    override func setUpWithError() throws {
        try requireRoot()
        hosts = try ThreeHosts(tag: "ma")
        _ = try hosts.client.exec("sysctl -qw net.ipv6.conf.\(hosts.clientLink).accept_ra=0")
        try hosts.client.ip("-6 route del default via fd00::1")
        bus = try PrivateBus()
        for _ in 0..<300 {
            let addresses = (try? hosts.router.exec("ip -6 addr show dev \(routerLink) scope link")) ?? ""
            if let line = addresses.split(separator: "\n").first(where: { $0.contains("inet6 fe80") }),
                !line.contains("tentative"), let address = line.split(separator: " ").dropFirst().first
            {
                routerLinkLocal = String(address.split(separator: "/")[0])
                break
            }
            usleep(10_000)
        }
        XCTAssertFalse(routerLinkLocal.isEmpty, "the router's link-local address never passed DAD")
    }

    func startDaemon() throws {
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200", "--timeout", "200", "--family", "ipv6"],
            namespace: hosts.client.name, host: "fd00:2::2")
        watcher = try SignalWatcher(bus: bus)
    }

    /// The router (or, with `from`, another of its addresses or another host) advertises on the client's link.
    func advertise(_ arguments: String, from source: String? = nil, card: String? = nil) throws {
        let environment = (source.map { "RA_SOURCE=\($0) " } ?? "") + (card.map { "RA_CARD=\($0) " } ?? "")
        let out = try hosts.router.exec(
            "env \(environment)\(Paths.python) \(Paths.namespaceHelpers)/send_ra.py \(routerLink) \(arguments)")
        XCTAssertTrue(out.contains("sent"), out)
    }

    func routeThroughTheRouter(_ verb: String = "add", metric: Int = 100) throws {
        try hosts.client.ip("-6 route \(verb) default via \(routerLinkLocal) dev \(hosts.clientLink) metric \(metric)")
    }

    var routerCard: String {
        ((try? hosts.router.exec("cat /sys/class/net/\(routerLink)/address")) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ":", with: "")
    }

    /// Item 1: the answer to the solicitation arrives before the route it implies; the prefix and the portal API are
    /// published within a second of the route (INTERFACE.md: 50 ms), not an advertisement interval later.
    func testTheFirstAdvertisementCountsOnceTheManagerInstallsItsRoute() throws {
        try startDaemon()
        try wait(.connectivity, "none")
        try advertise("pref64 2001:db8:64::/96 1800")
        try advertise("portal https://198.18.0.1:8443/api")
        usleep(300_000)
        XCTAssertEqual(try get(.nat64Prefix), "", "no route to Host yet")
        let routed = Date()
        try routeThroughTheRouter()
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
        try wait(.portalAPI, "https://198.18.0.1:8443/api", timeout: 2)
        XCTAssertLessThan(Date().timeIntervalSince(routed), 1.0)
        XCTAssertEqual(try get(.nat64Source), "ra")
    }

    /// Item 2: NetworkManager replaces the route when the router's preference changes; nothing is dropped and no
    /// PropertiesChanged of the prefix or the portal API is emitted. A route gone for good takes them after 2 s.
    func testAReplacedRouteKeepsTheRoutersWord() throws {
        try routeThroughTheRouter()
        try startDaemon()
        try advertise("pref64 2001:db8:64::/96 1800")
        try advertise("portal https://198.18.0.1:8443/api")
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
        try wait(.portalAPI, "https://198.18.0.1:8443/api", timeout: 2)
        let before = watcher?.propertyChanges.count ?? 0
        for _ in 0..<5 {
            try routeThroughTheRouter("del")
            try routeThroughTheRouter("add", metric: 20100)
            try routeThroughTheRouter("del", metric: 20100)
            try routeThroughTheRouter("add")
            usleep(100_000)
        }
        usleep(2_500_000)
        XCTAssertEqual(try get(.nat64Prefix), "2001:db8:64::/96")
        XCTAssertEqual(try get(.portalAPI), "https://198.18.0.1:8443/api")
        let touched = (watcher?.propertyChanges.dropFirst(before) ?? []).filter {
            $0[P.nat64Prefix.name] != nil || $0[P.portalAPI.name] != nil
        }
        XCTAssertEqual(touched.count, 0, "\(touched)")

        try routeThroughTheRouter("del")
        let gone = Date()
        try wait(.nat64Prefix, "", timeout: 4)
        XCTAssertGreaterThan(Date().timeIntervalSince(gone), 1.5, "the router's word stands 2 s after its route")
    }

    /// Item 3: two routers merged into one multipath default route are each a router of the interface.
    func testEachRouterOfAMultipathRouteIsHeard() throws {
        try hosts.router.ip("-6 addr add fe80::2/64 dev \(routerLink) nodad")
        try hosts.client.ip(
            "-6 route add default metric 100 nexthop via \(routerLinkLocal) dev \(hosts.clientLink) "
                + "nexthop via fe80::2 dev \(hosts.clientLink)")
        let routes = try hosts.client.exec("ip -6 route show default")
        XCTAssertTrue(routes.contains("nexthop"), routes)
        try startDaemon()
        try advertise("pref64 2001:db8:64::/96 1800", from: "fe80::2")
        try advertise("portal https://198.18.0.1:8443/api", from: routerLinkLocal)
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
        try wait(.portalAPI, "https://198.18.0.1:8443/api", timeout: 2)
    }

    /// Items 4 and 7 (N30): with the route through the router's link-local address, a host naming the router's card
    /// in its option and a second address of the router's own card (router lifetime 0, no route through it) are
    /// no router; the router's own advertisement still is.
    func testOnlyTheGatewaysOwnAddressSpeaksForARouteAManagerInstalled() throws {
        try hosts.router.ip("-6 addr add fe80::66/64 dev \(routerLink) nodad")
        try hosts.router.ip("-6 addr add fe80::99/64 dev \(routerLink) nodad")
        try routeThroughTheRouter()
        try startDaemon()
        // The client has spoken to its router, as any host on the network has: the kernel knows its card.
        _ = try? hosts.client.exec("ping -6 -c 1 -W 1 \(routerLinkLocal)%\(hosts.clientLink)")
        try advertise("pref64 2001:db8:66::/96 1800", from: "fe80::66", card: routerCard)
        try advertise("portal https://198.18.0.66/api", from: "fe80::66", card: routerCard)
        try advertise("pref64 2001:db8:99::/96 1800", from: "fe80::99")
        try advertise("portal https://198.18.0.99/api", from: "fe80::99")
        usleep(1_000_000)
        // Again, now that the kernel may have filed the router's card for the forger.
        try advertise("pref64 2001:db8:66::/96 1800", from: "fe80::66", card: "020000000066")
        usleep(500_000)
        XCTAssertEqual(try get(.nat64Prefix), "")
        XCTAssertEqual(try get(.portalAPI), "")
        // From the router's own address (the kernel would pick any of the card's link-local addresses).
        try advertise("pref64 2001:db8:64::/96 1800", from: routerLinkLocal)
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
    }
}
