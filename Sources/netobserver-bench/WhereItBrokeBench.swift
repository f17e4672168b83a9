import DBusKit
import EventLoop
import Glibc

/// Where it broke's figures (`netobserver-bench blame`), on a chain client — gateway — upstream —
/// server: Blame for each fault in 20 runs, how long after the Connectivity change it came, the
/// packets each diagnosis sent, the neighbour checks an hour costs while healthy, 20 suspend/resume
/// cycles with the upstream dead while asleep, and TimeInState against the time since it began.
extension MonitorBench {
    struct Fault {
        let name: String
        let expected: String
        let apply: String
        let heal: String
        /// After `apply`: what makes the service look again (nil: it notices by itself).
        var after: (() -> Void)?
    }

    func runWhereItBroke(runs: Int = 20) throws {
        guard let upstream = topology.upstream else { return print("monitor blame: needs the chain topology") }
        print("monitor blame: setting up")
        // BLAME_PHASE=names: the resolver and portal faults alone.
        if let phase = getenv("BLAME_PHASE"), String(cString: phase) == "names" {
            return try measureDNSAndPortal(runs: runs)
        }
        // logind, mocked on the daemon's bus, stands for the system bus's.
        extraEnvironment = "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(directory)/bus"
        let started = MonotonicClock.now().nanoseconds
        try startDaemon()
        shell(
            "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(directory)/bus /usr/bin/python3 -m dbusmock --system -t logind >/dev/null 2>&1 & echo $! > \(directory)/logind.pid"
        )
        guard waitFor(\.connectivity, "full", timeout: 10) != nil else {
            return print("monitor blame: never full (\(connectivity.last))")
        }
        let g0 = "\(topology.tag)r0"
        // The gateway counts what the diagnosis sends it, before any fault's rule: our ARP requests carry the
        // gateway's link-layer address (the kernel's own have zeros), the probe past it arrives with TTL 2.
        let census = directory + "/census.nft"
        writeFile(
            census,
            "table netdev census {\n chain count {\n  type filter hook ingress device \(g0) priority -600;\n"
                + "  arp operation request arp daddr ether != 00:00:00:00:00:00 counter name ours\n"
                + "  ip ttl 2 icmp type echo-request counter name beyond\n }\n"
                + " counter ours {}\n counter beyond {}\n}\n")
        shell("ip netns exec \(topology.router) nft -f \(census)")
        let faults = [
            Fault(
                name: "link", expected: "link", apply: "ip -n \(topology.client) link set \(topology.clientLink) down",
                heal:
                    "ip -n \(topology.client) link set \(topology.clientLink) up && ip -n \(topology.client) route replace default via 198.18.0.1"
            ),
            Fault(
                name: "gateway", expected: "gateway",
                apply: "ip netns exec \(topology.router) nft 'add table netdev fault; add chain netdev fault dropping "
                    + "{ type filter hook ingress device \(g0) priority -500; policy drop; }'",
                heal: "ip netns exec \(topology.router) nft delete table netdev fault"),
            Fault(
                name: "upstream", expected: "upstream",
                apply: "ip netns exec \(upstream) nft 'add table inet fault; add chain inet fault dropping "
                    + "{ type filter hook prerouting priority -400; policy drop; }'",
                heal: "ip netns exec \(upstream) nft delete table inet fault"),
            Fault(
                name: "host", expected: "host",
                apply: "ip netns exec \(topology.server) nft 'add table inet fault; add chain inet fault dropping "
                    + "{ type filter hook input priority 0; policy drop; }'",
                heal: "ip netns exec \(topology.server) nft delete table inet fault"),
        ]
        var diagnosisPackets: [Int] = []
        for fault in faults { diagnosisPackets += measure(fault, runs: runs) }
        let packets = diagnosisPackets.map(Double.init)
        print(
            "monitor blame packets_per_diagnosis (goal ≤ 5): median " + fixed(percentile(packets, 0.5), 1)
                + " max " + fixed(packets.max() ?? 0, 0))
        measureHealthyChecks()
        measureSleep()
        measureTimeInState(since: started)
        if let pid = Int32(readLine("\(directory)/logind.pid")) { kill(pid, SIGTERM) }
        stop()
        try measureDNSAndPortal(runs: runs)
    }

    /// `runs` times: the fault, Blame, healing; Blame right, how long after the Connectivity change, and the
    /// diagnosis's packets per run.
    private func measure(_ fault: Fault, runs: Int) -> [Int] {
        var packets: [Int] = []
        var right = 0
        var afterChange: [Double] = []
        var seen: [String: Int] = [:]
        for _ in 0..<runs {
            let before = counters()
            shell(fault.apply)
            fault.after?()
            guard let changed = waitAway(from: "full", timeout: 10) else {
                print("monitor blame \(fault.name): Connectivity never left full")
                shell(fault.heal)
                continue
            }
            let blamed = waitFor(\.blame, fault.expected, timeout: 3)
            // What it says a second later is the verdict of the run.
            _ = runLoop(atMost: 1)
            seen[blame.last, default: 0] += 1
            if let blamed, blame.last == fault.expected {
                right += 1
                afterChange.append(blamed > changed ? Double(blamed - changed) / 1000 : 0)
            }
            let after = counters()
            packets.append((after.ours - before.ours) + (after.beyond - before.beyond))
            shell(fault.heal)
            fault.after?()
            guard waitFor(\.connectivity, "full", timeout: 15) != nil else {
                print("monitor blame \(fault.name): never full again (\(connectivity.last))")
                break
            }
            _ = runLoop(atMost: 0.5)
        }
        let goal = fault.name == "gateway" ? "700" : "1500"
        print(
            "monitor blame \(fault.name) right (goal \(runs) of \(runs)): \(right) of \(runs)"
                + (seen.keys.count > 1 || seen[fault.expected] == nil
                    ? " (seen \(seen.sorted { $0.key < $1.key }))" : ""))
        reportMilliseconds("monitor blame \(fault.name) after_the_connectivity_change (goal ≤ \(goal) ms)", afterChange)
        return packets
    }

    /// The resolver failing and a captive portal, with Host a name (dnsmasq on the server) and CheckURL set.
    private func measureDNSAndPortal(runs: Int) throws {
        let names = "/etc/netns/\(topology.client)"
        shell("mkdir -p \(names)")
        writeFile(names + "/hosts", "127.0.0.1 localhost\n")
        writeFile(names + "/resolv.conf", "nameserver 198.18.2.2\noptions timeout:1 attempts:1\n")
        shell(
            "ip netns exec \(topology.server) dnsmasq --no-resolv --no-hosts --listen-address=198.18.2.2 --bind-interfaces "
                + "--user=root --pid-file=\(directory)/dnsmasq.pid --address=/far.test/198.18.2.2")
        let helpers = "Tests/NamespaceTests/helpers/check_server.py"
        shell("ip netns exec \(topology.server) /usr/bin/python3 \(helpers) 198.18.2.2 80 204 >/dev/null 2>&1 &")
        shell(
            "ip netns exec \(topology.router) /usr/bin/python3 \(helpers) 198.18.0.1 8080 302 http://198.18.0.1:8080/login >/dev/null 2>&1 &"
        )
        usleep(1_000_000)
        shell("rm -f \(directory)/bus")
        extraEnvironment = ""
        extraArguments = "--host far.test --dns-refresh 1 --check-url http://198.18.2.2/generate_204"
        defer {
            stop()
            if let pid = Int32(readLine("\(directory)/dnsmasq.pid")) { kill(pid, SIGTERM) }
            _ = system(
                "for ns in \(topology.router) \(topology.server); do ip netns pids $ns | xargs -r kill; done 2>/dev/null"
            )
            shell("rm -rf \(names)")
        }
        // What the first daemon said is not what this one says.
        status.last = ""
        connectivity.last = ""
        blame.last = ""
        try startDaemon()
        guard waitFor(\.connectivity, "full", timeout: 15) != nil else {
            return print("monitor blame dns/portal: never full (\(connectivity.last))")
        }
        var check = 0
        // A new CheckURL (another query) is checked at once, as a network change would make it.
        let recheck = { [unowned self] in
            check += 1
            setCheckURL("http://198.18.2.2/generate_204?run=\(check)")
        }
        let server = "ip netns exec \(topology.server) nft"
        let router = "ip netns exec \(topology.router) nft"
        _ = measure(
            Fault(
                name: "dns", expected: "dns",
                apply:
                    "\(server) 'add table inet fault; add chain inet fault dropping { type filter hook input priority 0; }; "
                    + "add rule inet fault dropping udp dport 53 drop'",
                heal: "\(server) delete table inet fault"), runs: runs)
        _ = measure(
            Fault(
                name: "portal", expected: "portal",
                apply:
                    "\(router) 'add table ip portal; add chain ip portal redirecting { type nat hook prerouting priority -100; }; "
                    + "add rule ip portal redirecting iifname \(topology.tag)r0 tcp dport 80 dnat to 198.18.0.1:8080'",
                heal: "\(router) delete table ip portal", after: recheck), runs: runs)
    }

    private func setCheckURL(_ url: String) {
        guard let connection,
            let call = try? Message.methodCall(
                destination: "org.netobserver.Monitor", path: "/org/netobserver/Monitor",
                interface: "org.freedesktop.DBus.Properties", member: "Set"),
            (try? call.append([.string("org.netobserver.Monitor"), .string("CheckURL"), .variant(.string(url))])) != nil
        else { return }
        _ = try? connection.callBlocking(call, timeoutMilliseconds: 5000)
    }

    /// Our ARP requests and probes past the gateway, as the gateway counted them so far.
    private func counters() -> (ours: Int, beyond: Int) {
        let text = commandText("ip netns exec \(topology.router) nft list counters table netdev census 2>/dev/null")
        var values: [Int] = []
        for line in text.split(separator: "\n") where line.contains("packets") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if let index = words.firstIndex(of: "packets"), index + 1 < words.count, let value = Int(words[index + 1]) {
                values.append(value)
            }
        }
        return (values.first ?? 0, values.dropFirst().first ?? 0)
    }

    /// Runs the loop until Connectivity is anything but `value` (and not `unknown`, a check under way); when it changed.
    private func waitAway(from value: String, timeout: Double) -> UInt64? {
        let deadline = MonotonicClock.now().nanoseconds + UInt64(timeout * 1e9)
        func away() -> Bool { connectivity.last != value && connectivity.last != "unknown" }
        while !away() && MonotonicClock.now().nanoseconds < deadline { _ = runLoop(atMost: 0.05) }
        return away() ? connectivity.at : nil
    }

    /// Three minutes of health: our ARP requests to the gateway, as an hour's worth.
    private func measureHealthyChecks() {
        let before = counters().ours
        _ = runLoop(atMost: 180)
        let sent = counters().ours - before
        print("monitor blame neighbour_checks_per_hour_while_healthy (goal ≤ 60): \(sent * 20) (\(sent) ARP in 3 min)")
    }

    /// 20 cycles: PrepareForSleep(true), the upstream dies and comes back while asleep, PrepareForSleep(false).
    private func measureSleep() {
        let upstream = topology.upstream ?? ""
        let outagesBefore = outageCount()
        let asleepBefore = timeInState()["asleep"] ?? 0
        var asleepFor: Double = 0
        var leftFull = 0
        for _ in 0..<20 {
            emitPrepareForSleep(true)
            let slept = MonotonicClock.now().nanoseconds
            _ = runLoop(atMost: 0.2)
            shell(
                "ip netns exec \(upstream) nft 'add table inet fault; add chain inet fault dropping "
                    + "{ type filter hook prerouting priority -400; policy drop; }'")
            _ = runLoop(atMost: 1.5)
            shell("ip netns exec \(upstream) nft delete table inet fault")
            emitPrepareForSleep(false)
            asleepFor += Double(MonotonicClock.now().nanoseconds - slept) / 1e9
            let wentAway = waitAway(from: "full", timeout: 1.5)
            if wentAway != nil {
                leftFull += 1
                _ = waitFor(\.connectivity, "full", timeout: 10)
            }
        }
        let outages = outageCount() - outagesBefore
        let asleep = Double((timeInState()["asleep"] ?? 0) - asleepBefore)
        print(
            "monitor blame sleep_cycles_outages (goal 0 in 20): \(outages) (Connectivity left full after \(leftFull) resumes)"
        )
        print("monitor blame sleep_asleep_seconds (goal within 1 s of \(fixed(asleepFor, 1)) s): \(fixed(asleep, 0))")
    }

    /// TimeInState's sum against the time since the history began: the daemon's start (its state directory is new),
    /// both on CLOCK_BOOTTIME (/proc's start time and uptime).
    private func measureTimeInState(since started: UInt64) {
        let total = timeInState().values.reduce(0, +)
        let fields = readLine("/proc/\(daemonPID)/stat").split(separator: ")").last?.split(separator: " ") ?? []
        let startTicks = fields.count > 19 ? Double(fields[19]) ?? 0 : 0
        let uptime = Double(readLine("/proc/uptime").split(separator: " ").first ?? "0") ?? 0
        let elapsed = uptime - startTicks / Double(sysconf(Int32(_SC_CLK_TCK)))
        print(
            "monitor blame time_in_state_sum_s: \(total) against \(fixed(elapsed, 2)) s since the daemon started "
                + "(goal within 1 s or one Interval: \(fixed(elapsed - Double(total), 2)) s apart)")
    }

    private func emitPrepareForSleep(_ start: Bool) {
        shell(
            "busctl --address=unix:path=\(directory)/bus call org.freedesktop.login1 /org/freedesktop/login1 "
                + "org.freedesktop.DBus.Mock EmitSignal sssav org.freedesktop.login1.Manager PrepareForSleep b 1 b \(start)"
        )
    }

    private func outageCount() -> Int {
        guard let connection,
            let call = try? Message.methodCall(
                destination: "org.netobserver.Monitor", path: "/org/netobserver/Monitor",
                interface: "org.netobserver.Monitor", member: "GetHistory"),
            (try? call.append([.uint32(1000)])) != nil,
            let reply = try? connection.callBlocking(call, timeoutMilliseconds: 5000),
            case .array(_, let entries)? = (try? reply.arguments())?.first
        else { return -1 }
        return entries.count
    }

    private func timeInState() -> [String: UInt64] {
        guard let connection,
            let call = try? Message.methodCall(
                destination: "org.netobserver.Monitor", path: "/org/netobserver/Monitor",
                interface: "org.freedesktop.DBus.Properties", member: "Get"),
            (try? call.append([.string("org.netobserver.Monitor"), .string("TimeInState")])) != nil,
            let reply = try? connection.callBlocking(call, timeoutMilliseconds: 5000),
            case .variant(.dictionary(_, _, let entries))? = (try? reply.arguments())?.first
        else { return [:] }
        var times: [String: UInt64] = [:]
        for entry in entries {
            if let key = entry.key.stringValue, case .uint64(let value) = entry.value { times[key] = value }
        }
        return times
    }
}
