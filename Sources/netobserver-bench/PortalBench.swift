import DBusKit
import EventLoop
import Glibc
import NetCore

/// Portal truth's figures (`netobserver-bench portal`): the router announces its captive-portal API
/// (RFC 8910) and serves it over HTTPS with a test CA's certificate; how long until `portal`, how long
/// until the API's "not captive" ends it, what the client sends meanwhile, whether an interceptor ever
/// passes the echo, and how the loop answers while the API hangs.
extension MonitorBench {
    func runPortal() throws {
        print("monitor portal: setting up")
        let certificates = directory + "/ca"
        shell("sh Tests/HTTPCheckTests/make_test_ca.sh \(certificates) IP:198.18.0.1,IP:198.18.2.2")
        extraArguments = "--ca-file \(certificates)/ca.pem --check-url http://198.18.2.2/echo"
        let capport = directory + "/capport.json"
        writeFile(capport, #"{"captive": true, "user-portal-url": "https://198.18.0.1:8443/portal"}"#)
        let server = "python3 Tests/HTTPCheckTests/server.py"
        background(
            topology.router,
            "\(server) --bind 198.18.0.1 --port 8443 --tls \(certificates)/server.pem \(certificates)/server.key "
                + "--capport-file \(capport)")
        background(topology.server, "\(server) --bind 198.18.2.2 --port 80")
        background(topology.router, "\(server) --bind 198.18.0.1 --port 8080 --always-204")
        // The announcing router is the client's IPv6 router: only a router of the interface is heard.
        shell(
            "ip -n \(topology.client) -6 addr add fd00::2/64 dev \(topology.clientLink) nodad && "
                + "ip -n \(topology.router) -6 addr add fd00::1/64 dev \(topology.tag)r0 nodad && "
                + "ip -n \(topology.client) -6 route add default via fd00::1")
        usleep(2_500_000) // the router's link-local address leaves DAD; the servers listen
        // The router's card known to the client, as on any network it has talked over.
        shell("ip netns exec \(topology.client) python3 Tests/NamespaceTests/helpers/echo6.py fd00::1 >/dev/null")
        try startDaemon()
        guard waitFor(\.connectivity, "full", timeout: 10) != nil else {
            return print("monitor portal: never full (\(connectivity.last))")
        }
        measureAnnouncement(capport, certificates)
        measureInterception()
        measureHangingAPI(capport)
        stop()
        // The servers, by the namespaces they run in (exit runs no deinit).
        _ = system(
            "for ns in \(topology.router) \(topology.server); do ip netns pids $ns | xargs -r kill; done 2>/dev/null")
    }

    /// RA → portal, and the API's "not captive" → full, 10 times; the packets the client sent meanwhile
    /// to anyone but the API's server and Host.
    private func measureAnnouncement(_ capport: String, _ certificates: String) {
        // The router counts what the client sends that is neither to Host nor to the API (nor IPv6's own link chatter).
        let rules = directory + "/census.nft"
        writeFile(
            rules,
            "table inet census {\n chain count {\n  type filter hook prerouting priority -300;\n"
                + "  iifname \"\(topology.tag)r0\" ip daddr 198.18.2.2 return\n"
                + "  iifname \"\(topology.tag)r0\" ip daddr 198.18.0.1 tcp dport 8443 return\n"
                + "  iifname \"\(topology.tag)r0\" meta l4proto ipv6-icmp return\n"
                + "  iifname \"\(topology.tag)r0\" counter\n }\n}\n")
        shell("ip netns exec \(topology.router) nft -f \(rules)")
        // The API's own round trip, as a client in the same namespace sees it.
        let roundTrip = firstLine(
            of: "ip netns exec \(topology.client) curl -s -o /dev/null -w '%{time_total}' "
                + "--cacert \(certificates)/ca.pem -H 'Accept: application/captive+json' https://198.18.0.1:8443/capport"
        )
        var toPortal: [Double] = []
        var toFull: [Double] = []
        for run in 0..<10 {
            writeFile(capport, #"{"captive": true, "user-portal-url": "https://198.18.0.1:8443/portal"}"#)
            let output = "\(directory)/ra.out"
            unlink(output)
            _ = system(
                "ip netns exec \(topology.router) python3 Tests/NamespaceTests/helpers/send_ra.py \(topology.tag)r0 portal "
                    + "'https://198.18.0.1:8443/capport?run=\(run)' > \(output).part 2>&1 && mv \(output).part \(output) &"
            )
            guard let portal = waitFor(\.connectivity, "portal", timeout: 5) else {
                return print("monitor portal: no portal (\(connectivity.last))")
            }
            for _ in 0..<300 where access(output, F_OK) != 0 { usleep(10_000) }
            guard let sent = readLine(output).split(separator: " ").last.flatMap({ UInt64($0) }) else {
                return print("monitor portal: the advertisement was not sent (python3?)")
            }
            toPortal.append((Double(portal) - Double(sent)) / 1000)
            let opened = MonotonicClock.now().nanoseconds
            writeFile(capport, #"{"captive": false}"#)
            guard let full = waitFor(\.connectivity, "full", timeout: 6) else {
                return print("monitor portal: the portal did not end")
            }
            toFull.append((Double(full) - Double(opened)) / 1000)
        }
        let stray = firstLine(
            of:
                "ip netns exec \(topology.router) nft list table inet census | grep -o 'packets [0-9]*' | awk '{s+=$2} END {print s+0}'"
        )
        print("monitor portal api_round_trip_ms (curl from the client): " + fixed((Double(roundTrip) ?? 0) * 1000, 2))
        reportMilliseconds("monitor portal advertisement_to_portal (goal ≤ API round trip + 50 ms)", toPortal)
        reportMilliseconds("monitor portal api_not_captive_to_full (goal ≤ 2 s + API round trip)", toFull)
        print("monitor portal packets_to_others_while_following (goal 0): \(stray.isEmpty ? "?" : stray)")
        shell("ip netns exec \(topology.router) nft delete table inet census")
    }

    /// A middlebox answering 204 to everything (the router's DNAT of port 80): with CheckEcho, 20 checks, each a new
    /// CheckURL; how many read `full`.
    private func measureInterception() {
        let router = "ip netns exec \(topology.router) nft"
        shell(
            "\(router) add table ip proxy && \(router) add chain ip proxy pre '{ type nat hook prerouting priority -100; }' && "
                + "\(router) add rule ip proxy pre iifname \(topology.tag)r0 tcp dport 80 dnat to 198.18.0.1:8080")
        setProperty("CheckEcho", .boolean(true))
        var full = 0
        var limited = 0
        for run in 0..<20 {
            setProperty("CheckURL", .string("http://198.18.2.2/echo?run=\(run)"))
            // Each Set starts a check ("checking …", unknown); its answer is what counts.
            _ = waitFor(\.connectivity, "unknown", timeout: 2)
            var answered = ""
            for _ in 0..<100 {
                _ = runLoop(atMost: 0.1)
                if connectivity.last != "unknown" { answered = connectivity.last; break }
            }
            if answered == "full" { full += 1 } else if answered == "limited" { limited += 1 }
        }
        print("monitor portal interceptor_with_echo_full (goal 0 of 20): \(full) of 20 (limited \(limited))")
        shell("\(router) delete table ip proxy")
        setProperty("CheckURL", .string(""))
    }

    /// The API never answers: Peer.Ping's round trip through the daemon's loop meanwhile.
    private func measureHangingAPI(_ capport: String) {
        writeFile(capport, "HANG")
        _ = system(
            "ip netns exec \(topology.router) python3 Tests/NamespaceTests/helpers/send_ra.py \(topology.tag)r0 portal "
                + "'https://198.18.0.1:8443/capport?hang' >/dev/null 2>&1")
        var pings: [Double] = []
        let end = MonotonicClock.now().nanoseconds + 6_000_000_000
        while MonotonicClock.now().nanoseconds < end {
            guard let connection,
                let call = try? Message.methodCall(
                    destination: "org.netobserver.Monitor", path: "/org/netobserver/Monitor",
                    interface: "org.freedesktop.DBus.Peer", member: "Ping")
            else { break }
            let start = MonotonicClock.now().nanoseconds
            guard (try? connection.callBlocking(call, timeoutMilliseconds: 5000)) != nil else { break }
            pings.append(Double(MonotonicClock.now().nanoseconds - start) / 1000)
            usleep(5_000)
        }
        reportMilliseconds("monitor portal peer_ping_while_the_api_hangs", pings)
    }

    private func setProperty(_ name: String, _ value: DBusValue) {
        guard let connection,
            let call = try? Message.methodCall(
                destination: "org.netobserver.Monitor", path: "/org/netobserver/Monitor",
                interface: "org.freedesktop.DBus.Properties", member: "Set"),
            (try? call.append([.string("org.netobserver.Monitor"), .string(name), .variant(value)])) != nil
        else { return }
        _ = try? connection.callBlocking(call, timeoutMilliseconds: 5000)
    }

    private func background(_ namespace: String, _ command: String) {
        _ = system("ip netns exec \(namespace) \(command) >/dev/null 2>&1 &")
    }
}
