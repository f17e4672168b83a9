import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import MonitorRules
import TestTime
import Timekeeping
import XCTest

/// netobserverd end to end: the daemon in a client namespace behind a router,
/// probing a server namespace; everything observed over D-Bus from outside.
final class MonitorNamespaceTests: XCTestCase {
    var hosts: ThreeHosts!
    var client: NetworkNamespace!
    var router: NetworkNamespace!
    var server: NetworkNamespace!
    var bus: PrivateBus!
    var daemon: DaemonProcess!
    var watcher: SignalWatcher?
    private var helpers: [Process] = []

    override func setUpWithError() throws {
        try requireRoot()
        hosts = try ThreeHosts(tag: "m")
        client = hosts.client
        router = hosts.router
        server = hosts.server
        // Names for the test, and a resolver (the router, which has none) that fails fast:
        // `ip netns exec` lays /etc/netns/NAME/* over /etc/*.
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(client.name)", withIntermediateDirectories: true)
        try "127.0.0.1 localhost\n198.18.2.2 server.test\nfd00:2::2 server.test\n198.18.2.3 other.test\n"
            .write(toFile: "/etc/netns/\(client.name)/hosts", atomically: true, encoding: .utf8)
        try "nameserver 198.18.0.1\noptions timeout:1 attempts:1\n"
            .write(toFile: "/etc/netns/\(client.name)/resolv.conf", atomically: true, encoding: .utf8)
        bus = try PrivateBus()
    }

    override func tearDown() {
        watcher?.stop()
        for helper in helpers where helper.isRunning { helper.terminate(); helper.waitUntilExit() }
        daemon?.stop()
        bus?.stop()
        if let client { try? FileManager.default.removeItem(atPath: "/etc/netns/\(client.name)") }
        client = nil
        router = nil
        server = nil
        hosts = nil
    }

    func startDaemon(
        host: String = "198.18.2.2", _ arguments: [String] = ["--interval", "200", "--timeout", "200"]
    ) throws {
        daemon = try DaemonProcess(bus: bus, arguments: arguments, namespace: client.name, host: host)
    }

    func startWatcher() throws {
        watcher = try SignalWatcher(bus: bus)
    }

    /// The StatusChanged signals seen so far, as (status, host).
    func statusSignals() -> [(status: String, host: String)] {
        watcher?.statuses ?? []
    }

    func get(_ property: P) throws -> String {
        try readProperty(property, bus: bus)
    }

    func set(_ property: P, _ value: String) throws {
        let out = try runCommand([
            "busctl", "--address=\(bus.address)", "set-property", MonitorContract.busName,
            MonitorContract.objectPath, MonitorContract.interface, property.name,
            property.type.signature, value,
        ])
        XCTAssertEqual(out.status, 0, out.stderr)
    }

    /// Polls Status until it is `expected`; returns the seconds it took.
    @discardableResult
    func waitForStatus(
        _ expected: String, timeout: Double = 5, file: StaticString = #filePath, line: UInt = #line
    ) throws -> Double {
        if let took = try waitForProperty(.status, expected, bus: bus, timeout: timeout) { return took }
        XCTFail(
            "\(P.status) did not become \(expected) in \(timeout) s; it is \(try get(.status)): \(try get(.reason))\n\(daemon.log)",
            file: file, line: line)
        return timeout
    }

    func client(_ arguments: [String]) throws -> Outcome {
        try runCommand([Paths.client, "--address", bus.address] + arguments, timeout: 60)
    }

    // MARK: Tests

    /// Defect 4: a link-local Host with its zone is probed on that link (the zone reaches the
    /// socket) and its route is looked up there (RTA_OIF), even with another link beside it.
    func testALinkLocalHostWithAZoneIsProbedOnItsLink() throws {
        try router.ip("-6 addr add fe80::1/64 dev mr0 nodad")
        // Datagram ICMP sockets, which refuse a link-local destination without its zone (EINVAL).
        _ = try client.exec("sysctl -qw net.ipv4.ping_group_range='0 2147483647'")
        // A second link with its own fe80::/64 route (a veth pair inside the client).
        try client.ip("link add mz0 type veth peer name mz1")
        try client.ip("link set mz0 up")
        try client.ip("link set mz1 up")
        try startDaemon(host: "fe80::1%mc0")
        try waitForStatus("ethernet")
        XCTAssertEqual(try get(.interface), "mc0")
        XCTAssertEqual(try get(.address), "fe80::1%mc0")
        XCTAssertGreaterThan(Int(try get(.roundTripTime)) ?? 0, 0)
        XCTAssertTrue(daemon.log.contains("with ICMP (datagram socket)"), daemon.log)
        // A zone naming no interface here is refused with a reason, not probed without it.
        try set(.host, "fe80::1%nosuch0")
        try waitForStatus("none")
        let reason = try get(.reason)
        XCTAssertTrue(reason.contains("fe80::1%nosuch0"), reason)
    }

    func testStartsConnectedOverTheVeth() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        XCTAssertEqual(try get(.interface), "mc0")
        XCTAssertEqual(try get(.address), "198.18.2.2")
        XCTAssertEqual(try get(.reason), "")
        XCTAssertEqual(try get(.reachable), "true")
        XCTAssertGreaterThan(Int(try get(.roundTripTime)) ?? 0, 0)
    }

    /// Sends batches of Checks from one connection (NO_REPLY when asked), waiting for the bus to
    /// deliver each batch; returns the echo requests counted at the server after each batch.
    private func checksAndProbes(_ batches: [Int], noReply: Bool) throws -> [Int] {
        let script = """
            import dbus, dbus.lowlevel, subprocess, sys, time
            bus = dbus.bus.BusConnection(sys.argv[1])
            def counted():
                listing = subprocess.check_output(["ip", "netns", "exec", sys.argv[2], "iptables", "-L", "INPUT", "-v", "-n", "-x"], text=True)
                return [int(l.split()[0]) for l in listing.splitlines() if "icmptype 8" in l][0]
            for count in map(int, sys.argv[3:]):
                for _ in range(count):
                    m = dbus.lowlevel.MethodCallMessage("\(MonitorContract.busName)", "\(MonitorContract.objectPath)", "\(MonitorContract.interface)", "Check")
                    m.set_no_reply(\(noReply ? "True" : "False"))
                    bus.send_message(m)
                ping = dbus.lowlevel.MethodCallMessage("\(MonitorContract.busName)", "\(MonitorContract.objectPath)", "org.freedesktop.DBus.Peer", "Ping")
                bus.send_message_with_reply_and_block(ping, 10)
                time.sleep(0.3)
                print(counted(), flush=True)
            """
        let out = try runCommand([Paths.python, "-c", script, bus.address, server.name] + batches.map(String.init))
        XCTAssertEqual(out.status, 0, out.stderr)
        return out.stdout.split(separator: "\n").compactMap { Int($0) }
    }

    func testNoReplyAndRefusedChecksForceNoProbe() throws {
        try startDaemon(["--interval", "3600000", "--timeout", "2000"])
        try waitForStatus("ethernet")
        // The counting rule stays first, so it sees probes that a later rule drops.
        _ = try server.exec("iptables -A INPUT -p icmp --icmp-type echo-request")
        XCTAssertEqual(try checksAndProbes([500], noReply: true), [0], "500 NO_REPLY Checks sent no probe")
        // The host goes silent, so Checks stay pending for a Timeout: after 64 of them, the rest are refused.
        _ = try server.exec("iptables -A INPUT -p icmp --icmp-type echo-request -j DROP")
        let counts = try checksAndProbes([64, 300], noReply: false)
        XCTAssertEqual(counts.count, 2)
        XCTAssertEqual(counts.last, counts.first, "300 Checks refused with LimitsExceeded sent no probe")
        // One forced probe per Timeout, plus at most the engine's own early follow-up of it.
        XCTAssertLessThanOrEqual(counts.first ?? 99, 2, "64 Checks share one forced probe")
        print("probes sent for 64 pending Checks: \(counts.first ?? -1)")
    }

    func testACheckWhoseProbeCannotBeSentAnswersAtOnce() throws {
        try startDaemon(["--interval", "3600000", "--timeout", "10000"])
        try waitForStatus("ethernet")
        // The target's first probe counts as a forced one: a Check forces the next only a Timeout later.
        usleep(10_100_000)
        // The local firewall refuses our probes: sendmsg fails at once (EPERM).
        _ = try client.exec("iptables -A OUTPUT -p icmp --icmp-type echo-request -j REJECT")
        let started = Date()
        let check = try client(["check"])
        let took = Date().timeIntervalSince(started)
        XCTAssertEqual(check.stdout, "none\n")
        XCTAssertLessThan(took, 5, "answered when the send failed, not after the 10 s timeout")
        print("Check with a failed send answered after \(String(format: "%.3f", took)) s")
    }

    func testLinkDownThenUp() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        try startWatcher()
        try client.ip("link set mc0 down")
        let took = try waitForStatus("none")
        XCTAssertEqual(try get(.reason), "interface mc0 is down")
        XCTAssertEqual(try get(.interface), "")
        XCTAssertLessThan(took, 1.0, "no waiting for probes")
        try client.ip("link set mc0 up")
        try client.ip("route add default via 198.18.0.1")
        try waitForStatus("ethernet")
        usleep(300_000)
        let signals = statusSignals().map(\.0)
        XCTAssertEqual(signals, ["none", "ethernet"], "StatusChanged exactly once per change")
    }

    /// Two targets, one behind a fault: that one says `none` with its own StatusChanged, the
    /// other is untouched; a Check pending on a target that is removed gets an error at once.
    func testTwoTargetsOneBehindAFault() throws {
        try startDaemon(host: "198.18.2.2", ["--interval", "200", "--timeout", "200", "--target", "198.18.2.3"])
        try waitForStatus("ethernet")
        let second = MonitorContract.Targets.path(1)
        func status(_ path: String) throws -> String {
            let out = try runCommand([
                "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName, path,
                MonitorContract.interface, P.status.name,
            ]).stdout
            return out.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "s ", with: "")
                .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        func until(_ path: String, _ expected: String) throws {
            for _ in 0..<250 where try status(path) != expected { usleep(20_000) }
            XCTAssertEqual(try status(path), expected, "\(path)\n\(daemon.log)")
        }
        try until(second, "ethernet")
        let signals = Process()
        signals.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        signals.arguments = [
            "--address=\(bus.address)", "monitor", "--match",
            "type='signal',interface='\(MonitorContract.interface)',member='\(MonitorContract.Signal.statusChanged.name)'",
        ]
        let output = Pipe()
        signals.standardOutput = output
        try signals.run()
        usleep(300_000)
        _ = try router.exec("iptables -A FORWARD -d 198.18.2.3 -j DROP")
        try until(second, "none")
        usleep(500_000)
        XCTAssertEqual(try status(MonitorContract.objectPath), "ethernet", "the other target is untouched")
        signals.terminate()
        signals.waitUntilExit()
        let seen = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(seen.contains("Path=\(second)") || seen.contains("Path \(second)"), seen)
        XCTAssertFalse(
            seen.contains("Path=\(MonitorContract.objectPath);")
                || seen.contains("Path=\(MonitorContract.objectPath)\n"), seen)

        // A Check on the silent target waits for the probe it forces (Timeout 5 s, no other probe
        // due for 10 s); removing the target answers it. The target ran at the defaults (Interval
        // and Timeout 1 s): after 1.5 s no probe sent before the change is in flight to be shared.
        for (property, value) in [(P.timeout, "5000"), (P.interval, "10000")] {
            XCTAssertEqual(
                try runCommand([
                    "busctl", "--address=\(bus.address)", "set-property", MonitorContract.busName, second,
                    MonitorContract.interface, property.name, "u", value,
                ]).status, 0)
        }
        usleep(1_500_000)
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        check.arguments = [
            "--address=\(bus.address)", "call", MonitorContract.busName, second, MonitorContract.interface,
            MonitorContract.Method.check.name,
        ]
        let errors = Pipe(), answer = Pipe()
        check.standardError = errors
        check.standardOutput = answer
        try check.run()
        usleep(300_000)
        XCTAssertTrue(
            check.isRunning,
            "the Check waits for a probe: "
                + (check.isRunning
                    ? "" : String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)))
        let removed = Date()
        XCTAssertEqual(
            try runCommand([
                "busctl", "--address=\(bus.address)", "call", MonitorContract.busName, MonitorContract.objectPath,
                MonitorContract.Targets.interface, MonitorContract.Targets.removeTarget, "o", second,
            ]).status, 0)
        check.waitUntilExit()
        XCTAssertLessThan(Date().timeIntervalSince(removed), 1)
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(
            message.contains("was removed"),
            message + String(decoding: answer.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) + daemon.log)
        XCTAssertEqual(try status(MonitorContract.objectPath), "ethernet")
    }

    /// A waybar module sees a fault as exactly one new line.
    func testAStatusBarGetsOneLinePerChange() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.client)
        process.arguments = ["--address", bus.address, "monitor", "--format", "waybar"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() }; process.waitUntilExit() }
        var text = ""
        func lines(after seconds: Double) -> [[String: String]] {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                let handle = output.fileHandleForReading
                var poll = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
                if Glibc.poll(&poll, 1, 50) > 0 { text += String(decoding: handle.availableData, as: UTF8.self) }
            }
            return text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]
            }
        }
        XCTAssertEqual(lines(after: 0.5).map { $0["class"] ?? "" }, ["ethernet"])
        try client.ip("link set mc0 down")
        let down = lines(after: 1.5)
        XCTAssertEqual(down.map { $0["class"] ?? "" }, ["ethernet", "none"], "one line for the fault: \(text)")
        XCTAssertTrue(down.last?["tooltip"]?.contains("interface mc0 is down") ?? false, text)
        try client.ip("link set mc0 up")
        try client.ip("route add default via 198.18.0.1")
        try waitForStatus("ethernet")
        // The repair takes two steps (link, then route), each with its own Reason: a line each,
        // ending connected; never the same line twice.
        let all = lines(after: 0.5)
        XCTAssertEqual(all.last?["class"], "ethernet", text)
        XCTAssertTrue(zip(all, all.dropFirst()).allSatisfy { $0 != $1 }, text)
    }

    func testDefaultRouteDeletedThenRestored() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        try client.ip("route del default")
        try waitForStatus("none")
        XCTAssertEqual(try get(.reason), "no route to 198.18.2.2")
        try client.ip("route add default via 198.18.0.1")
        try waitForStatus("ethernet", timeout: 1)
    }

    func testSilentLossThenHealing() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        // Silent to ICMP and to the ladder's TCP connections alike (ICMP alone: ConnectivityNamespaceTests).
        _ = try router.exec("iptables -I FORWARD -d 198.18.2.2 -j DROP")
        let took = try waitForStatus("none", timeout: 3)
        XCTAssertLessThan(took, 2 * 0.2 + 0.2 + 0.3, "failure threshold × interval + timeout")
        // The router forwards nothing to Host, one hop past it: Reason names that place once Blame has it.
        XCTAssertNotNil(try waitForProperty(.blame, "upstream", bus: bus, timeout: 1.5 + 0.3), "Blame is not upstream")
        XCTAssertEqual(try get(.reason), "gateway 198.18.0.1 answers on mc0; nothing past it does")
        XCTAssertEqual(try get(.interface), "mc0", "the route is still there")
        XCTAssertEqual(try get(.connectivity), "limited")
        _ = try router.exec("iptables -D FORWARD -d 198.18.2.2 -j DROP")
        try waitForStatus("ethernet")
    }

    func testRouterRejectNamesTheRouter() throws {
        try startDaemon(["--interval", "1000", "--timeout", "1000", "--failures", "3"])
        try waitForStatus("ethernet")
        _ = try router.exec("iptables -I FORWARD -p icmp --icmp-type echo-request -j REJECT")
        let took = try waitForStatus("none", timeout: 2.5)
        XCTAssertLessThan(took, 1.3, "at the next probe, not after 3 timeouts")
        XCTAssertEqual(try get(.reason), "198.18.2.2 unreachable (port unreachable), said 198.18.0.1")
    }

    /// Issue 45 item 1: at the seed's settings (1000/1000/2), the router's own "network unreachable" when its link
    /// towards the server goes down — sent within its ICMP rate limit, on by default — is believed at once: the
    /// next probe after the cut is refused, not waited out (2.63 s was seen, as slow as silence).
    func testTheRoutersOwnNetworkUnreachableIsBelievedAtTheSeedsSettings() throws {
        _ = try router.exec("sysctl -qw net.ipv4.icmp_ratelimit=1000 net.ipv6.icmp.ratelimit=1000")
        try startDaemon(["--interval", "1000", "--timeout", "1000", "--failures", "2"])
        try waitForStatus("ethernet")
        var took: [Double] = []
        for trial in 0..<3 {
            // Outages are not back to back: the router's error budget (a token a second, a burst of five) refills.
            usleep(UInt32(5_000_000 + trial * 310_000))
            try router.ip("link set mr1 down")
            took.append(try waitForStatus("none", timeout: 4))
            let reason = try get(.reason)
            XCTAssertTrue(reason.contains("unreachable"), reason)
            try router.ip("link set mr1 up")
            try router.ip("route replace 198.18.2.0/24 dev mr1")
            try waitForStatus("ethernet", timeout: 5)
        }
        print("router's network unreachable → none: \(took.map { String(format: "%.2f", $0) }) s")
        for value in took { XCTAssertLessThan(value, 1.0 + 0.3, "at the next probe, not after the failure threshold") }
    }

    func testReplyDelayBeyondAndBelowTimeout() throws {
        _ = try server.exec("sysctl -qw net.ipv4.icmp_echo_ignore_all=1")
        // "Too slow" is for a host that answers neither the echo nor the ladder's TCP connection in time.
        _ = try server.exec("iptables -I INPUT -p tcp --dport 443 -j DROP")
        let responder = Process()
        responder.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        responder.arguments = [
            "netns", "exec", server.name, Paths.python, Paths.namespaceHelpers + "/slow_responder.py", "0.3",
        ]
        let output = Pipe()
        responder.standardOutput = output
        try responder.run()
        helpers.append(responder)
        _ = output.fileHandleForReading.availableData
        try startDaemon(["--interval", "200", "--timeout", "200"])
        try waitForStatus("none", timeout: 5)
        usleep(500_000)
        let slowReason = try get(.reason)
        XCTAssertTrue(slowReason.hasPrefix("host too slow: no reply within 200 ms"), slowReason)
        try set(.timeout, "1000")
        try waitForStatus("ethernet", timeout: 5)
        XCTAssertGreaterThanOrEqual(Int(try get(.roundTripTime)) ?? 0, 300_000, "the higher round trip shows")
    }

    func testRandomLossWithThresholdsThreeAndTwoFlapsBoundedly() throws {
        try startDaemon(["--interval", "100", "--timeout", "150", "--failures", "3", "--recoveries", "2"])
        try waitForStatus("ethernet")
        try startWatcher()
        _ = try router.exec(
            "iptables -I FORWARD -p icmp --icmp-type echo-request -m statistic --mode random --probability 0.3 -j DROP")
        sleep(10)
        let flaps = statusSignals().count
        print(
            "30 % loss, 10 s at 100 ms, thresholds 3/2: \(flaps) StatusChanged, \(P.packetLoss) \(try get(.packetLoss))"
        )
        XCTAssertLessThan(flaps, 20, "about 100 probes must not make more than a few flaps")
        XCTAssertGreaterThan(Double(try get(.packetLoss)) ?? 0, 0)
    }

    func testUnresolvableHostAndIPv6OnlyPath() throws {
        try startDaemon(host: "nowhere.invalid")
        try waitForStatus("none", timeout: 8)
        let reason = try get(.reason)
        XCTAssertTrue(reason.hasPrefix("cannot resolve nowhere.invalid: "), reason)
        try client.ip("route del default")
        try set(.addressFamily, "ipv6")
        try set(.host, "server.test")
        try waitForStatus("ethernet")
        XCTAssertEqual(try get(.address), "fd00:2::2")
        XCTAssertEqual(try get(.interface), "mc0")
    }

    func testAnyPicksTheFamilyThatHasARoute() throws {
        try client.ip("route del default")
        try startDaemon(host: "server.test")
        try waitForStatus("ethernet")
        XCTAssertEqual(try get(.address), "fd00:2::2", "no IPv4 default route: the IPv6 address")
    }

    func testSetHostAtRuntimeAndCheck() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        try startWatcher()
        try set(.host, "other.test")
        try waitForStatus("ethernet")
        XCTAssertEqual(try get(.address), "198.18.2.3")
        usleep(300_000)
        let signals = statusSignals()
        XCTAssertEqual(signals.first?.0, "unknown")
        XCTAssertEqual(signals.last?.0, "ethernet")
        XCTAssertTrue(signals.allSatisfy { $0.1 == "other.test" })
        let check = try client(["check"])
        XCTAssertEqual(check.stdout, "ethernet\n")
        XCTAssertEqual(check.status, 0)
        _ = try router.exec("iptables -I FORWARD -p icmp --icmp-type echo-request -j REJECT")
        let refused = try client(["check"])
        XCTAssertEqual(refused.stdout, "none\n", "Check probes now and answers with the fresh verdict")
        XCTAssertEqual(refused.status, 1)
    }

    func testWaitReturnsWhenTheLinkComesUpAndTimesOut() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        try client.ip("link set mc0 down")
        try waitForStatus("none")
        let timedOut = try client(["wait", "--timeout", "1"])
        XCTAssertEqual(timedOut.status, 1)
        let waiter = Process()
        waiter.executableURL = URL(fileURLWithPath: Paths.client)
        waiter.arguments = ["--address", bus.address, "wait", "--timeout", "10"]
        try waiter.run()
        usleep(500_000)
        XCTAssertTrue(waiter.isRunning)
        let up = Date()
        try client.ip("link set mc0 up")
        try client.ip("route add default via 198.18.0.1")
        waiter.waitUntilExit()
        XCTAssertEqual(waiter.terminationStatus, 0)
        XCTAssertLessThan(Date().timeIntervalSince(up), 2)
    }

    func testClientCommands() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        let screen = try client(["status"])
        XCTAssertEqual(screen.status, 0)
        XCTAssertTrue(screen.stdout.contains("Status:       ethernet (reachable)"), screen.stdout)
        XCTAssertTrue(screen.stdout.contains("Interface:    mc0"), screen.stdout)
        let json = try client(["status", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(object?[P.status.name] as? String, "ethernet")
        XCTAssertEqual(object?[P.interface.name] as? String, "mc0")
        XCTAssertEqual(object?[P.reachable.name] as? Bool, true)
        XCTAssertEqual(try client(["set", "interval", "300"]).status, 0)
        XCTAssertEqual(try get(.interval), "300")
        let refused = try client(["set", "interval", "5"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("\(P.interval): 5 is out of range"), refused.stderr)
        XCTAssertEqual(try client(["set", "colour", "red"]).status, 2)
        XCTAssertEqual(try client(["wait"]).status, 0)

        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: Paths.client)
        monitor.arguments = ["--address", bus.address, "monitor", "--json"]
        let output = Pipe()
        monitor.standardOutput = output
        try monitor.run()
        usleep(500_000)
        try client.ip("link set mc0 down")
        try waitForStatus("none")
        usleep(300_000)
        kill(monitor.processIdentifier, SIGINT)
        monitor.waitUntilExit()
        XCTAssertEqual(monitor.terminationStatus, 0, "monitor ends cleanly on SIGINT")
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(
            separator: "\n")
        XCTAssertGreaterThanOrEqual(lines.count, 2)
        XCTAssertTrue(lines.first?.contains("\"\(P.status)\":\"ethernet\"") ?? false, "\(lines)")
        XCTAssertTrue(lines.last?.contains("\"\(P.status)\":\"none\"") ?? false, "\(lines)")
    }

    func testGDBusProxyCacheTracksRealChanges() throws {
        try startDaemon()
        try waitForStatus("ethernet")
        let proxy = Process()
        proxy.executableURL = URL(fileURLWithPath: Paths.python)
        proxy.arguments = [
            "-c",
            """
            import sys, time
            from gi.repository import Gio, GLib
            c = Gio.DBusConnection.new_for_address_sync(sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
            p = Gio.DBusProxy.new_sync(c, 0, None, "\(MonitorContract.busName)", "\(MonitorContract.objectPath)", "\(MonitorContract.interface)", None)
            ctx = GLib.MainContext.default()
            def until(f, s):
                end = time.monotonic() + s
                while not f() and time.monotonic() < end: ctx.iteration(False); time.sleep(0.005)
                return f()
            print("start", p.get_cached_property("\(P.status)").unpack(), flush=True)
            ok = until(lambda: p.get_cached_property("\(P.status)").unpack() == "none", 10)
            print("cached", p.get_cached_property("\(P.status)").unpack(), p.get_cached_property("\(P.reason)").unpack(), flush=True)
            sys.exit(0 if ok else 1)
            """, bus.address,
        ]
        let output = Pipe()
        proxy.standardOutput = output
        try proxy.run()
        usleep(800_000)
        try client.ip("link set mc0 down")
        proxy.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(proxy.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("cached none interface mc0 is down"), text)
    }

    func testRestartKeepsTheHostThatWasSet() throws {
        let state = bus.directory + "/kept"
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200"], stateDirectory: state, namespace: client.name,
            host: "198.18.2.2")
        try waitForStatus("ethernet")
        try set(.host, "198.18.2.3")
        daemon.stop()
        // No --host this time: the Host Set over D-Bus comes back from the state file.
        let restarted = Process()
        restarted.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        restarted.arguments = [
            "netns", "exec", client.name, Paths.daemon, "--address", bus.address, "--state-dir", state,
        ]
        restarted.standardError = FileHandle.nullDevice
        try restarted.run()
        defer { restarted.terminate(); restarted.waitUntilExit() }
        try waitForStatus("ethernet")
        XCTAssertEqual(try get(.host), "198.18.2.3")
    }
}
