import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// INTERFACE.md "Portal truth", end to end: the router announces its captive-portal API (RFC 8910,
/// option 37) and serves it over HTTPS with a test CA's certificate (the daemon trusts it through
/// --ca-file); a middlebox answering 204 to everything cannot fake the echo; a network dropping
/// port 443 reads limited with Partial.
final class PortalTruthNamespaceTests: DaemonInNamespaceTestCase {
    var certificates: URL!
    var capportFile: String!
    let api = "https://198.18.0.1:8443/capport"
    override var alongside: [P] { [.reason, .portalAPI, .portalURL, .partial] }

    override func setUpWithError() throws {
        try requireRoot()
        try requireTool("/usr/bin/openssl")
        hosts = try ThreeHosts(tag: "pt")
        bus = try PrivateBus()
        certificates = try LoopbackHTTPServer.makeCertificates(san: "IP:198.18.0.1,IP:198.18.2.2,DNS:api.test")
        capportFile = bus.directory + "/capport.json"
        try captive(true)
        // The router's link-local address must have passed DAD before it can advertise.
        for _ in 0..<300 {
            let addresses = (try? hosts.router.exec("ip -6 addr show dev ptr0 scope link")) ?? ""
            if addresses.contains("fe80") && !addresses.contains("tentative") { break }
            usleep(10_000)
        }
        // The client has talked to its IPv6 router (fd00::1) as a host on such a network has: the kernel knows its card,
        // which tells the router's advertisements, sent from its link-local address, from anyone else's.
        _ = try? hosts.client.exec("\(Paths.python) \(Paths.namespaceHelpers)/echo6.py fd00::1")
    }

    override func tearDown() {
        super.tearDown()
        if let certificates { try? FileManager.default.removeItem(at: certificates) }
    }

    func certificate(_ name: String) -> String { certificates.appendingPathComponent(name).path }

    func captive(_ captive: Bool, secondsRemaining: Int = 0) throws {
        let text =
            captive
            ? #"{"captive": true, "user-portal-url": "https://198.18.0.1:8443/portal", "venue-info-url": "https://198.18.0.1:8443/venue"}"#
            : #"{"captive": false, "seconds-remaining": \#(secondsRemaining)}"#
        try write(text)
    }

    func write(_ text: String) throws {
        try text.write(toFile: capportFile + ".new", atomically: false, encoding: .utf8)
        _ = rename(capportFile + ".new", capportFile)
    }

    /// server.py in `namespace`, its port printed first (the helper's log says when it is up).
    @discardableResult
    func server(in namespace: NetworkNamespace, bind: String, port: Int, _ extra: [String] = []) throws -> Process {
        let process = try run(
            in: namespace,
            [
                Paths.python, Paths.repository.appendingPathComponent("Tests/HTTPCheckTests/server.py").path,
                "--bind", bind, "--port", "\(port)",
            ] + extra, waitForReady: false)
        for _ in 0..<300 {
            if (try? hosts.client.exec(
                "\(Paths.python) -c \"import socket; socket.create_connection(('\(bind)', \(port)), 1)\"")) != nil
            {
                break
            }
            usleep(10_000)
        }
        return process
    }

    func startAPI(_ certificate: String = "server") throws {
        try server(
            in: hosts.router, bind: "198.18.0.1", port: 8443,
            [
                "--tls", self.certificate("\(certificate).pem"), self.certificate("\(certificate).key"),
                "--capport-file", capportFile,
            ])
    }

    func startDaemon(_ arguments: [String] = []) throws {
        daemon = try DaemonProcess(
            bus: bus,
            arguments: ["--interval", "200", "--timeout", "200", "--ca-file", certificate("ca.pem")] + arguments,
            namespace: hosts.client.name, host: "198.18.2.2")
    }

    func advertise(_ uri: String) throws {
        let out = try hosts.router.exec("\(Paths.python) \(Paths.namespaceHelpers)/send_ra.py ptr0 portal '\(uri)'")
        XCTAssertTrue(out.contains("sent"), out)
    }

    /// The network announces its API: `portal` within a round trip of it, PortalURL the API's; the API
    /// saying not captive ends the portal within 2 s and a round trip.
    func testTheNetworksOwnWordMakesAndEndsThePortal() throws {
        try startAPI()
        try startDaemon()
        try wait(.connectivity, "full")
        XCTAssertEqual(try get(.portalAPI), "")
        try advertise(api)
        let took = try wait(.connectivity, "portal", timeout: 3)
        XCTAssertLessThan(took, 1.5)
        XCTAssertEqual(try get(.portalAPI), api)
        XCTAssertEqual(try get(.portalURL), "https://198.18.0.1:8443/portal")
        XCTAssertEqual(try get(.portalVenueURL), "https://198.18.0.1:8443/venue")
        XCTAssertEqual(try get(.reason), "captive portal: sign in at https://198.18.0.1:8443/portal")
        XCTAssertEqual(try get(.reachable), "false")
        let screen = try runCommand([Paths.client, "--address", bus.address, "status"]).stdout
        XCTAssertTrue(screen.contains("Sign in at:   https://198.18.0.1:8443/portal"), screen)
        XCTAssertTrue(screen.contains("Portal API:   \(api)"), screen)
        XCTAssertTrue(screen.contains("Venue:        https://198.18.0.1:8443/venue"), screen)

        try captive(false, secondsRemaining: 3600)
        let ended = try wait(.connectivity, "full", timeout: 4)
        XCTAssertLessThan(ended, 3.0, "asked every 2 s while captive")
        XCTAssertEqual(try get(.portalURL), "")
        XCTAssertEqual(try get(.portalSecondsRemaining), "3600")
        XCTAssertEqual(try get(.portalAPI), api, "the announcement stays")
        // The API was asked as RFC 8908 says, over TLS.
        let requests = try String(contentsOfFile: bus.directory + "/helper-0.log", encoding: .utf8)
        XCTAssertTrue(requests.contains("application/captive+json"), requests)

        // The interface going down ends the announcement.
        try hosts.client.ip("link set ptc0 down")
        try wait(.portalAPI, "", timeout: 3)
    }

    /// Issue 45 N22: an announcement naming this machine's own address is never fetched (the service asking itself,
    /// or whatever listens here), as CheckURL refuses one.
    func testAnAPIOnThisMachineIsNeverFetched() throws {
        let own = try server(
            in: hosts.client, bind: "198.18.0.2", port: 8443,
            ["--tls", certificate("server.pem"), certificate("server.key"), "--capport-file", capportFile])
        try startDaemon()
        try wait(.connectivity, "full")
        try advertise("https://198.18.0.2:8443/capport")
        try wait(.portalAPI, "https://198.18.0.2:8443/capport", timeout: 3)
        usleep(1_000_000)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertTrue(daemon?.log.contains("resolves to a local address") ?? false, daemon?.log ?? "")
        let requests = (try? String(contentsOfFile: bus.directory + "/helper-0.log", encoding: .utf8)) ?? ""
        XCTAssertFalse(requests.contains("captive+json"), "this machine was asked: \(requests)")
        own.terminate()
    }

    /// DHCPv4 option 114, as NetworkManager reports it (the device's DHCP4Config, Options' captive_portal):
    /// the same API, the same portal, with no router advertisement.
    func testDHCPsWordThroughNetworkManager() throws {
        try startAPI()
        let networkManager = try MockService.networkManager(bus: bus)
        try networkManager.addEthernetDevice("veth", interface: hosts.clientLink, metered: 0)
        try networkManager.setDHCP4Options("veth", number: 1, ["captive_portal": api, "ip_address": "198.18.0.2"])
        try startDaemon()
        try wait(.portalAPI, api, timeout: 5)
        try wait(.connectivity, "portal", timeout: 3)
        XCTAssertEqual(try get(.portalURL), "https://198.18.0.1:8443/portal")
        // NetworkManager gone: its word goes with it.
        networkManager.stop()
        try wait(.portalAPI, "", timeout: 5)
        try wait(.connectivity, "full", timeout: 5)
    }

    /// Nothing an API answers beside RFC 8908's JSON makes a portal: each bad answer is logged and ignored. Each
    /// case is a fresh service's first announcement (announcements on one interface are fetched at most once per 10 s).
    func testABadAnswerNeverMakesAPortal() throws {
        try startAPI()
        let bad: [(String, String)] = [
            ("not json", "not JSON"),
            (#"{"captive": true}"#, "no \"user-portal-url\""),
            (#"{"captive": true, "user-portal-url": "http://198.18.0.1/portal"}"#, "not an https URL"),
            ("STATUS 500", "HTTP 500"),
            (
                #"{"captive": true, "user-portal-url": "https://p.test/", "x": ""# + String(repeating: "a", count: 5000)
                    + #""}"#,
                "more than 4096 bytes"
            ),
            (#"{"captive": true, "captive": true, "user-portal-url": "https://p.test/"}"#, "twice"),
        ]
        for (index, (answer, why)) in bad.enumerated() {
            try startDaemon()
            try wait(.connectivity, "full")
            try write(answer)
            try advertise(api + "?case=\(index)")
            try wait(.portalAPI, api + "?case=\(index)", timeout: 2)
            for _ in 0..<200 where !(daemon?.log.contains(why) ?? false) { usleep(10_000) }
            XCTAssertTrue(daemon?.log.contains(why) ?? false, "\(why): \(daemon?.log ?? "")")
            XCTAssertEqual(try get(.connectivity), "full", answer)
            daemon?.stop()
        }
        try startDaemon()
        try wait(.connectivity, "full")
        // Plain http is never asked, and the URN means no portal.
        try advertise("http://198.18.0.1:8443/capport")
        try wait(.portalAPI, "http://198.18.0.1:8443/capport", timeout: 2)
        try advertise("urn:ietf:params:capport:unrestricted")
        try wait(.portalAPI, "urn:ietf:params:capport:unrestricted", timeout: 2)
        usleep(500_000)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertTrue(daemon?.log.contains("not an https URI") ?? false, daemon?.log ?? "")
    }

    /// An API whose certificate the daemon does not trust is not believed.
    func testAnUntrustedAPIIsIgnored() throws {
        try startAPI("rogue")
        try startDaemon()
        try wait(.connectivity, "full")
        try advertise(api)
        try wait(.portalAPI, api, timeout: 2)
        for _ in 0..<200 where !(daemon?.log.contains("not trusted") ?? false) { usleep(10_000) }
        XCTAssertTrue(daemon?.log.contains("certificate is not trusted") ?? false, daemon?.log ?? "")
        XCTAssertEqual(try get(.connectivity), "full")
    }

    /// An API that never answers holds nothing up: the loop answers Peer.Ping at once meanwhile, and
    /// the fetch ends at its limit (max(5 s, Timeout)) with a log line.
    func testAHangingAPIDoesNotStallTheLoop() throws {
        try write("HANG")
        try startAPI()
        try startDaemon()
        try wait(.connectivity, "full")
        try advertise(api)
        var slowest = 0.0
        let start = Date()
        while Date().timeIntervalSince(start) < 3 {
            let before = Date()
            _ = try runCommand([
                "busctl", "--address=\(bus.address)", "call", MonitorContract.busName, MonitorContract.objectPath,
                "org.freedesktop.DBus.Peer", "Ping",
            ])
            slowest = max(slowest, Date().timeIntervalSince(before))
        }
        XCTAssertLessThan(slowest, 0.5, "Peer.Ping took \(slowest) s while the API hung")
        XCTAssertEqual(try get(.connectivity), "full")
        for _ in 0..<600 where !(daemon?.log.contains("ignored: timed out") ?? false) { usleep(10_000) }
        XCTAssertTrue(daemon?.log.contains("ignored: timed out") ?? false, daemon?.log ?? "")
    }

    /// A transparent proxy answering 204 to everything: `full` without the echo (the old hole), never
    /// with it; the real server's echo makes it `full` again once the proxy is gone.
    func testTheEchoUnmasksAnInterceptor() throws {
        try server(in: hosts.server, bind: "198.18.2.2", port: 80)
        try server(in: hosts.router, bind: "198.18.0.1", port: 8080, ["--always-204"])
        try startDaemon(["--check-url", "http://198.18.2.2/echo", "--check-echo"])
        try wait(.connectivity, "full")
        XCTAssertEqual(try get(.checkEcho), "true")
        // The proxy: the router sends the client's port 80 to its own server.
        _ = try hosts.router.exec("nft add table ip proxy")
        _ = try hosts.router.exec("nft add chain ip proxy pre { type nat hook prerouting priority -100 \\; }")
        _ = try hosts.router.exec("nft add rule ip proxy pre iifname ptr0 tcp dport 80 dnat to 198.18.0.1:8080")
        for run in 0..<5 {
            // Without the echo the proxy passes for the Internet: what the echo is for.
            try setEcho(false)
            try wait(.connectivity, "full", timeout: 6)
            try setEcho(true)
            try wait(.connectivity, "limited", timeout: 6)
            XCTAssertEqual(
                try get(.reason), "check http://198.18.2.2/echo: answered without the echo (intercepted)", "run \(run)")
        }
        _ = try hosts.router.exec("nft delete table ip proxy")
        // The real server's echo: full again (the check is retried every 10 s while it fails).
        try wait(.connectivity, "full", timeout: 15)
        // Every check's nonce was fresh.
        let requests = try String(contentsOfFile: bus.directory + "/helper-0.log", encoding: .utf8)
        let nonces = requests.split(separator: "\n").compactMap { line -> Substring? in
            guard let range = line.range(of: "netobserver-nonce=") else { return nil }
            return line[range.upperBound...].prefix(32)
        }
        XCTAssertFalse(nonces.isEmpty)
        XCTAssertEqual(Set(nonces).count, nonces.count, "a nonce was reused")
    }

    func setEcho(_ on: Bool) throws {
        _ = try runCommand([
            "busctl", "--address=\(bus.address)", "set-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.interface, "CheckEcho", "b", on ? "true" : "false",
        ])
    }

    /// HTTPS dropped on the way while plain HTTP passes: `limited`, Partial; and back when 443 passes again.
    /// A certificate the daemon does not trust fails the secure check as well.
    func testHTTPSBlockedIsPartial() throws {
        try server(in: hosts.server, bind: "198.18.2.2", port: 80)
        try server(
            in: hosts.server, bind: "198.18.2.2", port: 443,
            ["--tls", certificate("server.pem"), certificate("server.key")])
        try server(
            in: hosts.server, bind: "198.18.2.3", port: 443,
            ["--tls", certificate("rogue.pem"), certificate("rogue.key")])
        _ = try hosts.router.exec("nft add table ip nohttps")
        _ = try hosts.router.exec("nft add chain ip nohttps forward_filter { type filter hook forward priority 0 \\; }")
        _ = try hosts.router.exec("nft add rule ip nohttps forward_filter tcp dport 443 drop")
        try startDaemon(["--check-url", "http://198.18.2.2/204", "--secure-check-url", "https://198.18.2.2/204"])
        try wait(.partial, "true", timeout: 10)
        XCTAssertEqual(try get(.connectivity), "limited")
        let reason = try get(.reason)
        XCTAssertTrue(reason.hasPrefix("HTTPS fails on this network: https://198.18.2.2/204: "), reason)
        let screen = try runCommand([Paths.client, "--address", bus.address, "status"]).stdout
        XCTAssertTrue(screen.contains("Partial:      yes"), screen)
        XCTAssertTrue(screen.contains("Secure check: https://198.18.2.2/204"), screen)
        let metrics = try runCommand([Paths.client, "--address", bus.address, "metrics"]).stdout
        XCTAssertTrue(
            metrics.contains("netobserver_partial{host=\"198.18.2.2\",target=\"/org/netobserver/Monitor\"} 1"), metrics)
        _ = try hosts.router.exec("nft delete table ip nohttps")
        // Retried every 10 s while the check fails.
        try wait(.connectivity, "full", timeout: 15)
        XCTAssertEqual(try get(.partial), "false")
        _ = try runCommand([
            "busctl", "--address=\(bus.address)", "set-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.interface, "SecureCheckURL", "s", "https://198.18.2.3/204",
        ])
        try wait(.partial, "true", timeout: 8)
        let untrusted = try get(.reason)
        XCTAssertTrue(untrusted.contains("certificate is not trusted"), untrusted)
    }
}
