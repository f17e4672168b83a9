import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// INTERFACE.md "DNS truth", end to end against real resolvers in the test's namespaces: dnsmasq on the
/// router (healthy, caching with a dead upstream, rewriting every NXDOMAIN), a responder that forges its
/// answers, and systemd-resolved 252 itself (Debian's package unpacked, run in the client's namespace on a
/// bus of its own) in front of unbound serving DNS-over-TLS. The client's /etc/resolv.conf is the test's.
final class DnsTruthNamespaceTests: DaemonInNamespaceTestCase {
    override var alongside: [P] { [.reason, .dns, .dnsServer, .dnsTransport, .connectivity, .blame] }
    var resolved: ResolvedInNamespace?
    var certificates: URL?

    override func setUpWithError() throws {
        try requireRoot()
        try requireTool("/usr/sbin/dnsmasq")
        hosts = try ThreeHosts(tag: "dn")
        bus = try PrivateBus()
    }

    override func tearDown() {
        daemon?.stop()
        resolved?.stop()
        super.tearDown()
        if let certificates { try? FileManager.default.removeItem(at: certificates) }
    }

    /// The client's resolver list.
    func names(_ resolvConf: String) throws {
        try hosts.client.useNames(hosts: "127.0.0.1 localhost\n", resolvConf: resolvConf)
    }

    /// A server in `namespace` until the test ends, its output in `log`; ready once `ready` shows there. A shell stays
    /// between: Foundation takes a child that closes the descriptors it inherited (dnsmasq does) for one that ended,
    /// and waits for it, blocking every other child's end.
    @discardableResult
    func serve(in namespace: NetworkNamespace, _ arguments: [String], log: String, ready: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments =
            [
                "netns", "exec", namespace.name, "/bin/sh", "-c",
                #"trap 'kill $child' TERM; "$@" & child=$!; wait $child"#, "sh",
            ]
            + arguments
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        helpers.append(process)
        for _ in 0..<300 {
            if ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains(ready) { return process }
            usleep(10_000)
        }
        throw NSError(domain: "\(arguments.joined(separator: " ")) did not start: \(text(log))", code: 1)
    }

    func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// dnsmasq on `address` with `extra` flags, every query logged to the returned file; it asks no nameserver of
    /// the machine's (no /etc/resolv.conf), only a `--server` given.
    @discardableResult
    func dnsmasq(
        in namespace: NetworkNamespace, _ address: String, _ extra: [String], name: String = "dnsmasq"
    ) throws -> (process: Process, log: String) {
        let log = bus.directory + "/\(name).log"
        let process = try serve(
            in: namespace,
            [
                "/usr/sbin/dnsmasq", "--keep-in-foreground", "--user=root", "--conf-file=/dev/null", "--no-hosts",
                "--no-resolv",
                "--port=53", "--listen-address=\(address)", "--bind-interfaces", "--log-queries",
                "--log-facility=-", "--pid-file=",
            ] + extra, log: log, ready: "started")
        return (process, log)
    }

    func stop(_ process: Process) {
        process.terminate()
        process.waitUntilExit()
    }

    func startDaemon(host: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws {
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200", "--timeout", "200"] + arguments, namespace: hosts.client.name,
            host: host, environment: environment)
    }

    func client(_ arguments: [String]) throws -> String {
        try runCommand([Paths.client, "--address", bus.address] + arguments).stdout
    }

    /// What `property` read every 100 ms for `seconds`.
    func watch(_ property: P, for seconds: Double) throws -> [String] {
        var seen: [String] = []
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            let value = try get(property)
            if seen.last != value { seen.append(value) }
            usleep(100_000)
        }
        return seen
    }

    func testAHealthyResolverIsOkWithItsServerTransportAndRoundTrip() throws {
        try names("nameserver 198.18.0.1\n")
        try dnsmasq(in: hosts.router, "198.18.0.1", ["--address=/web.test/198.18.2.2", "--address=/test/"])
        try startDaemon(host: "web.test")
        try wait(.dns, "ok")
        try wait(.connectivity, "full")
        XCTAssertEqual(try get(.dnsServer), "198.18.0.1")
        XCTAssertEqual(try get(.dnsTransport), "udp")
        XCTAssertGreaterThan(UInt64(try get(.dnsRoundTripTime)) ?? 0, 0)
        let screen = try client(["status"])
        XCTAssertTrue(screen.contains("DNS:          ok via 198.18.0.1 (udp), "), screen)
        let json = try client(["status", "--json"])
        XCTAssertTrue(json.contains(#""Dns":"ok""#) && json.contains(#""DnsServer":"198.18.0.1""#), json)
        let metrics = try client(["metrics"])
        XCTAssertTrue(metrics.contains(#"state="ok"} 1"#), metrics)
        XCTAssertTrue(metrics.contains("netobserver_dns_round_trip_seconds{"), metrics)
        // An added target has DNS truth of its own.
        _ = try client(["add", "web.test"])
        let added = MonitorContract.Targets.path(1)
        XCTAssertNotNil(try waitForProperty(.dns, "ok", bus: bus, path: added, timeout: 5), "the added target's Dns")
        XCTAssertEqual(try readProperty(.dnsServer, bus: bus, path: added), "198.18.0.1")
    }

    /// A router's caching resolver whose upstream died answers Host from its cache; the random label under
    /// DnsProbeZone cannot be: `failing` within 15 s of the first fresh lookup, `limited`, Blame `dns`; back to
    /// `ok` and `full` within 5 s and one probe of the upstream's return.
    func testACachingResolverWithADeadUpstreamFailsThroughTheProbeZoneAndHeals() throws {
        try names("nameserver 198.18.0.1\n")
        let upstreamFlags = ["--address=/web.test/198.18.2.2", "--address=/test/", "--local-ttl=3600"]
        var upstream = try dnsmasq(in: hosts.server, "198.18.2.3", upstreamFlags, name: "upstream")
        try dnsmasq(in: hosts.router, "198.18.0.1", ["--server=198.18.2.3"])
        try startDaemon(host: "web.test", ["--dns-probe-zone", "probe.test"])
        try wait(.dns, "ok")
        try wait(.connectivity, "full")

        stop(upstream.process)
        // A fresh lookup now (a changed zone asks at once, as a route change or resume does).
        _ = try client(["set", "dns-probe-zone", "probe.test."])
        let took = try wait(.dns, "failing", timeout: 16)
        XCTAssertLessThanOrEqual(took, 15, "failing within 15 s of the first fresh lookup")
        XCTAssertEqual(try get(.connectivity), "limited")
        XCTAssertEqual(try get(.blame), "dns")
        let reason = try get(.reason)
        XCTAssertTrue(reason.hasPrefix("DNS fails: new lookups of names under probe.test.: "), reason)
        XCTAssertTrue(reason.hasSuffix("(cached answers may still work)"), reason)
        let screen = try client(["status"])
        XCTAssertTrue(screen.contains("DNS:          failing: new lookups of names under probe.test."), screen)

        upstream = try dnsmasq(in: hosts.server, "198.18.2.3", upstreamFlags, name: "upstream-again")
        let healed = try wait(.dns, "ok", timeout: 8)
        XCTAssertLessThanOrEqual(healed, 6.5, "within 5 s and a lookup")
        try wait(.connectivity, "full", timeout: 2)
        XCTAssertEqual(try get(.blame), "")
    }

    /// A resolver that answers every name it does not know with an address: `intercepted` within 1 s of the
    /// network's first verdict, and Connectivity and each family's Reason untouched.
    func testAResolverRewritingNXDOMAINIsInterceptionThatLeavesConnectivityAlone() throws {
        try names("nameserver 198.18.0.1\n")
        try dnsmasq(in: hosts.router, "198.18.0.1", ["--address=/#/198.18.0.99"])
        try startDaemon(host: "198.18.2.2")
        try wait(.connectivity, "full")
        let took = try wait(.dns, "intercepted", timeout: 3)
        XCTAssertLessThan(took, 1.0)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertEqual(try get(.reason4), "")
        XCTAssertEqual(try get(.blame), "")
        let screen = try client(["status"])
        XCTAssertTrue(screen.contains("DNS:          intercepted: "), screen)
    }

    /// Answers with the wrong ID, or to another question, are dropped by the resolver library: the forged address
    /// never makes `intercepted` or `ok`; lookups that get nothing else fail.
    func testForgedAnswersAreNeverBelieved() throws {
        for mode in ["wrong-id", "wrong-question"] {
            try names("nameserver 198.18.0.1\n")
            let forger = try serve(
                in: hosts.router, [Paths.python, Paths.namespaceHelpers + "/dns_forger.py", "198.18.0.1", mode],
                log: bus.directory + "/forger-\(mode).log", ready: "ready")
            try startDaemon(host: "198.18.2.2", ["--dns-probe-zone", "probe.test"])
            try wait(.connectivity, "full")
            let seen = try watch(.dns, for: 11)
            XCTAssertTrue(text(bus.directory + "/forger-\(mode).log").contains("forged"), "the forger answered")
            XCTAssertTrue(Set(seen).isSubset(of: ["unknown", "failing"]), "\(mode): \(seen)")
            XCTAssertEqual(seen.last, "failing", "\(mode): \(seen)")
            daemon?.stop()
            stop(forger)
        }
    }

    /// The budget and the privacy rule: over a quiet window, one fresh lookup and one interception query, both
    /// to the configured resolver; not one DNS packet to anyone else.
    func testQueriesKeepToTheBudgetAndGoOnlyToTheConfiguredResolver() throws {
        try requireTool("/usr/sbin/nft")
        try names("nameserver 198.18.0.1\n")
        let resolver = try dnsmasq(
            in: hosts.router, "198.18.0.1", ["--address=/web.test/198.18.2.2", "--address=/test/"])
        _ = try hosts.client.exec(
            """
            nft -f - <<'EOF'
            table inet dnscount {
              chain out {
                type filter hook output priority 0;
                ip daddr != 198.18.0.1 udp dport { 53, 853 } counter
                ip daddr != 198.18.0.1 tcp dport { 53, 853 } counter
                meta nfproto ipv6 udp dport { 53, 853 } counter
                meta nfproto ipv6 tcp dport { 53, 853 } counter
              }
            }
            EOF
            """)
        try startDaemon(host: "web.test", ["--dns-probe-zone", "probe.test"])
        try wait(.dns, "ok")
        sleep(12)
        let queries = text(resolver.log).split(separator: "\n").filter { $0.contains("query[") }
        XCTAssertEqual(queries.filter { $0.contains(".invalid") }.count, 1, queries.joined(separator: "\n"))
        XCTAssertEqual(queries.filter { $0.contains(".probe.test") }.count, 1, queries.joined(separator: "\n"))
        let counters = try hosts.client.exec("nft list table inet dnscount")
        let counts = counters.split(separator: "\n").filter { $0.contains("counter packets") }
        XCTAssertEqual(counts.count, 4, counters)
        for line in counts { XCTAssertTrue(line.contains("counter packets 0 "), counters) }
    }

    // MARK: systemd-resolved

    func startResolved(_ configuration: String, trust: String? = nil) throws {
        resolved = try ResolvedInNamespace(namespace: hosts.client.name, configuration: configuration, trust: trust)
    }

    /// unbound on the router: plain DNS and DNS-over-TLS (port 853) with the test CA's certificate.
    func startUnbound() throws {
        try requireTool("/usr/sbin/unbound")
        let certificates = try LoopbackHTTPServer.makeCertificates(san: "IP:198.18.0.1,DNS:dot.test")
        self.certificates = certificates
        let configuration = bus.directory + "/unbound.conf"
        try """
        server:
          interface: 198.18.0.1@53
          interface: 198.18.0.1@853
          tls-port: 853
          tls-service-key: "\(certificates.appendingPathComponent("server.key").path)"
          tls-service-pem: "\(certificates.appendingPathComponent("server.pem").path)"
          access-control: 198.18.0.0/15 allow
          username: ""
          chroot: ""
          directory: "\(bus.directory)"
          pidfile: ""
          use-syslog: no
          logfile: ""
          verbosity: 1
          log-queries: yes
          do-ip6: no
          module-config: "iterator"
          local-zone: "test." static
          local-data: "web.test. 3600 IN A 198.18.2.2"
          local-zone: "invalid." static
        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        try serve(
            in: hosts.router, ["/usr/sbin/unbound", "-d", "-c", configuration], log: bus.directory + "/unbound.log",
            ready: "start of service")
    }

    func requireResolved() throws { try requireTool(ResolvedInNamespace.binary) }

    /// resolved set to DNS-over-TLS: the answer says it came encrypted (`tls`); with port 853 then dropped and Host
    /// in resolved's cache, `failing` within 15 s of the first fresh lookup, `limited`, Blame `dns`; 853 back: `ok`.
    /// (resolved 252 itself lets its cache go once its only server fails, so what applications get then is not
    /// asserted here.)
    func testResolvedWithDNSOverTLSToASilentServerFails() throws {
        try requireResolved()
        try startUnbound()
        try names("nameserver 127.0.0.53\n")
        try startResolved(
            "DNS=198.18.0.1#dot.test\nDNSOverTLS=yes",
            trust: certificates?.appendingPathComponent("ca.pem").path)
        try startDaemon(host: "web.test", environment: ["DBUS_SYSTEM_BUS_ADDRESS": resolved?.busAddress ?? ""])
        try wait(.dns, "ok")
        try wait(.connectivity, "full")
        XCTAssertEqual(try get(.dnsServer), "resolved")
        XCTAssertEqual(try get(.dnsTransport), "tls")
        XCTAssertEqual(try resolved?.resolve("web.test").status, 0, "Host is in resolved's cache")

        _ = try hosts.router.exec("iptables -I INPUT -p tcp --dport 853 -j DROP")
        _ = try client(["set", "dns-probe-zone", "probe.test"])
        let took = try wait(.dns, "failing", timeout: 16)
        XCTAssertLessThanOrEqual(took, 15)
        XCTAssertEqual(try get(.connectivity), "limited")
        XCTAssertEqual(try get(.blame), "dns")

        _ = try hosts.router.exec("iptables -D INPUT -p tcp --dport 853 -j DROP")
        // Back: the first answer may come slowly (resolved reconnects to its server first).
        try wait(.connectivity, "full", timeout: 20)
        let healed = try get(.dns)
        XCTAssertTrue(["ok", "slow"].contains(healed), healed)
        XCTAssertEqual(try get(.dnsTransport), "tls")
    }

    /// Opportunistic DNS-over-TLS on a network that blocks port 853 falls back to plain DNS: `unencrypted` within one
    /// lookup, Connectivity unchanged; where 853 works, `tls` and `ok`.
    func testOpportunisticDNSOverTLSFallingBackIsUnencrypted() throws {
        try requireResolved()
        try startUnbound()
        try names("nameserver 127.0.0.53\n")
        try startResolved("DNS=198.18.0.1\nDNSOverTLS=opportunistic")
        try startDaemon(host: "web.test", environment: ["DBUS_SYSTEM_BUS_ADDRESS": resolved?.busAddress ?? ""])
        try wait(.dns, "ok")
        XCTAssertEqual(try get(.dnsTransport), "tls")

        // Another network, whose middlebox refuses 853: resolved starts over there and falls back.
        _ = try hosts.router.exec("iptables -I INPUT -p tcp --dport 853 -j REJECT --reject-with tcp-reset")
        try resolved?.restart("DNS=198.18.0.1\nDNSOverTLS=opportunistic")
        _ = try client(["set", "dns-probe-zone", "probe.test"])
        try wait(.dns, "unencrypted", timeout: 6)
        XCTAssertEqual(try get(.connectivity), "full")
        XCTAssertEqual(try get(.dnsTransport), "")
        let screen = try client(["status"])
        XCTAssertTrue(
            screen.contains("DNS:          unencrypted: resolved is set to DNS-over-TLS but answered in plain text"),
            screen)
    }
}
