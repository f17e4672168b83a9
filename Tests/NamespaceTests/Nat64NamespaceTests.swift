import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// NAT64 (INTERFACE.md "Every path"), end to end: an IPv6-only client network whose router runs
/// tayga with the network-specific prefix 2001:db8:64::/96 (the well-known 64:ff9b::/96 refuses
/// 198.18.0.0/15, RFC 6052), so an IPv4-literal Host is reached only through the prefix. The
/// prefix is learned from the router's advertisement (PREF64, RFC 8781), or, with none, from
/// dnsmasq answering `ipv4only.arpa` (RFC 7050).
final class Nat64NamespaceTests: DaemonInNamespaceTestCase {
    var dnsPIDFile: String?
    override var alongside: [P] { [.reason, .reason4, .nat64Prefix] }

    override func setUpWithError() throws {
        try requireRoot()
        try requireTool("/usr/sbin/tayga")
        hosts = try ThreeHosts(tag: "n6")
        // The client's network is IPv6-only: no IPv4 address, no IPv4 route.
        try hosts.client.ip("route del default via 198.18.0.1")
        try hosts.client.ip("addr del 198.18.0.2/24 dev \(hosts.clientLink)")
        try hosts.client.ip("-6 addr add 2001:db8:1::2/64 dev \(hosts.clientLink) nodad")
        try hosts.router.ip("-6 addr add 2001:db8:1::1/64 dev n6r0 nodad")
        bus = try PrivateBus()
        try startTayga()
        try hosts.client.useNames(
            hosts: "127.0.0.1 localhost\n", resolvConf: "nameserver fd00:2::2\noptions timeout:1 attempts:1\n")
        // The router's link-local address must have passed DAD before it can advertise.
        for _ in 0..<300 {
            let addresses = (try? hosts.router.exec("ip -6 addr show dev n6r0 scope link")) ?? ""
            if addresses.contains("fe80") && !addresses.contains("tentative") { break }
            usleep(10_000)
        }
    }

    override func tearDown() {
        if let dnsPIDFile { killProcess(namedIn: dnsPIDFile) }
        super.tearDown()
    }

    /// tayga in the router: 2001:db8:64::/96 ↔ IPv4, the client's IPv6 addresses mapped into 198.18.64.0/24.
    func startTayga() throws {
        let directory = bus.directory + "/tayga"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let configuration = directory + "/tayga.conf"
        try """
        tun-device nat64
        ipv4-addr 198.18.65.1
        prefix 2001:db8:64::/96
        dynamic-pool 198.18.64.0/24
        data-dir \(directory)
        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        _ = try hosts.router.exec("tayga --mktun -c \(configuration)")
        try hosts.router.ip("link set nat64 up")
        try hosts.router.ip("route add 198.18.64.0/24 dev nat64")
        try hosts.router.ip("-6 route add 2001:db8:64::/96 dev nat64")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", hosts.router.name, "tayga", "-d", "-c", configuration]
        let log = directory + "/tayga.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        helpers.append(process)
        // Through the translator from the client: the path works before the service is asked about it.
        var translated = false
        for _ in 0..<50 where !translated {
            translated =
                (try? hosts.client.exec("\(Paths.python) \(Paths.namespaceHelpers)/echo6.py 2001:db8:64::c612:202"))
                != nil
        }
        XCTAssertTrue(
            translated, "tayga does not translate: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    func startDaemon(host: String = "198.18.2.2") throws {
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200", "--timeout", "200"],
            namespace: hosts.client.name, host: host)
    }

    /// `source` and `card`: sent as another host on the link (its link-local address, its link-layer address).
    func advertise(_ arguments: String, from source: String? = nil, card: String? = nil) throws {
        let environment = (source.map { "RA_SOURCE=\($0) " } ?? "") + (card.map { "RA_CARD=\($0) " } ?? "")
        let out = try hosts.router.exec(
            "env \(environment)\(Paths.python) \(Paths.namespaceHelpers)/send_ra.py n6r0 \(arguments)")
        XCTAssertTrue(out.contains("sent"), out)
    }

    /// The router advertises PREF64: the prefix is published at once, the IPv4 literal is full
    /// through it; a withdrawal (lifetime 0) drops it, and IPv4 is none again.
    func testAnAdvertisedPrefixCarriesAnIPv4LiteralHost() throws {
        try startDaemon()
        try wait(.connectivity4, "none")
        XCTAssertEqual(try get(.nat64Prefix), "")
        XCTAssertEqual(try get(.connectivity), "none", "no IPv4 route and no prefix: none, as before")
        try advertise("pref64 2001:db8:64::/96 1800")
        let took = try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
        XCTAssertLessThan(took, 1.0)
        XCTAssertEqual(try get(.nat64Source), "ra")
        try wait(.connectivity, "full")
        XCTAssertEqual(try get(.ipv4Path), "nat64")
        XCTAssertEqual(try get(.address4), "198.18.2.2", "Address4 stays the IPv4 address")
        XCTAssertEqual(try get(.address), "198.18.2.2")
        XCTAssertEqual(try get(.connectivity4), "full")

        try advertise("pref64 2001:db8:64::/96 0")
        try wait(.nat64Prefix, "", timeout: 2)
        try wait(.connectivity4, "none")
        XCTAssertEqual(try get(.ipv4Path), "")
    }

    /// Issue 45 item 9: where the kernel does not process router advertisements (accept_ra 0, as NetworkManager and
    /// networkd set it) RTNLGRP_ND_USEROPT stays silent; the service reads them itself.
    func testAnAdvertisementIsHeardWhereTheKernelIgnoresThem() throws {
        _ = try hosts.client.exec("sysctl -qw net.ipv6.conf.\(hosts.clientLink).accept_ra=0")
        try startDaemon()
        try wait(.connectivity4, "none")
        try advertise("pref64 2001:db8:64::/96 1800")
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
        XCTAssertEqual(try get(.nat64Source), "ra")
        try wait(.connectivity, "full")
    }

    /// Issue 45 N20: another host on the link announcing a prefix (from its own link-local address, with its own
    /// card) is no router of that interface: ignored, with a line in the log; the router's own word is taken.
    func testAnAdvertisementFromAnotherHostOnTheLinkIsIgnored() throws {
        try hosts.router.ip("-6 addr add fe80::66/64 dev n6r0 nodad")
        try startDaemon()
        try wait(.connectivity4, "none")
        try advertise("pref64 2001:db8:66::/96 1800", from: "fe80::66", card: "020000000066")
        usleep(500_000)
        XCTAssertEqual(try get(.nat64Prefix), "")
        // Held 10 s for a route through it (issue 54: a manager installs a router's route after its advertisement).
        XCTAssertNoThrow(try daemon?.waitUntil("which is not a router of that interface", timeout: 12))
        XCTAssertEqual(try get(.nat64Prefix), "")
        try advertise("pref64 2001:db8:64::/96 1800")
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
    }

    /// A prefix whose lifetime ends is dropped within a second of its end.
    func testAPrefixIsDroppedWhenItsLifetimeEnds() throws {
        try startDaemon()
        try wait(.connectivity4, "none")
        try advertise("pref64 2001:db8:64::/96 8")
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
        let advertised = Date()
        try wait(.nat64Prefix, "", timeout: 12)
        let lived = Date().timeIntervalSince(advertised)
        XCTAssertGreaterThan(lived, 7.0)
        XCTAssertLessThan(lived, 9.5, "dropped \(lived - 8) s after its lifetime's end")
    }

    /// Malformed options are ignored with a log line, the service keeps running and takes a good one after.
    func testMalformedOptionsAreIgnored() throws {
        try startDaemon()
        try wait(.connectivity4, "none")
        // PREF64 with a prefix length code RFC 8781 does not define (7), and one of the wrong length.
        try advertise("raw 2602025f20010db80064000000000000")
        try advertise("raw 26030258" + String(repeating: "00", count: 20))
        usleep(300_000)
        XCTAssertEqual(try get(.nat64Prefix), "")
        XCTAssertTrue(daemon?.log.contains("router") ?? false, daemon?.log ?? "")
        try advertise("pref64 2001:db8:64::/96 600")
        try wait(.nat64Prefix, "2001:db8:64::/96", timeout: 2)
    }

    /// dnsmasq on the server answering `ipv4only.arpa` with the well-known addresses synthesized under `prefix` (the
    /// first 96 bits, as text ending in "::").
    func answerIpv4onlyArpa(under prefix: String) throws {
        let pidFile = bus.directory + "/dnsmasq.pid"
        try sh(
            "ip netns exec \(hosts.server.name) dnsmasq --no-resolv --no-hosts --listen-address=fd00:2::2 --bind-interfaces "
                + "--user=root --pid-file=\(pidFile) --host-record=ipv4only.arpa,\(prefix)c000:aa,\(prefix)c000:ab")
        dnsPIDFile = pidFile
    }

    /// No advertisement, a resolver answering ipv4only.arpa: the prefix comes from DNS.
    func testWithoutAnAdvertisementThePrefixComesFromDNS() throws {
        try answerIpv4onlyArpa(under: "2001:db8:64::")
        try startDaemon()
        try wait(.nat64Source, "dns", timeout: 5)
        XCTAssertEqual(try get(.nat64Prefix), "2001:db8:64::/96")
        try wait(.connectivity, "full")
        XCTAssertEqual(try get(.ipv4Path), "nat64")
    }

    /// Issue 54 item 7: `ipv4only.arpa` answered under the client's own on-link prefix (2001:db8:1::/64) was taken
    /// as the NAT64 prefix, and IPv4 "reached" through the link itself. Refused, from DNS too: no prefix, IPv4 none.
    /// (The tests had only ever answered with a prefix off the link.)
    func testAPrefixFromDNSOnTheLinkItselfIsRefused() throws {
        try answerIpv4onlyArpa(under: "2001:db8:1::")
        try startDaemon()
        try wait(.connectivity4, "none", timeout: 8)
        usleep(500_000)
        XCTAssertEqual(try get(.nat64Prefix), "")
        XCTAssertEqual(try get(.nat64Source), "")
        XCTAssertEqual(try get(.ipv4Path), "")
    }
}
