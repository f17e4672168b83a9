import CLinux
import DBusKit
import EventLoop
import Glibc
import NetAddress
import NetCore
import Reachability
import Timekeeping

/// netobserverd end to end, timed at a D-Bus client receiving StatusChanged:
/// the daemon runs in the client namespace on a private bus made here.
final class MonitorBench {
    let topology: BenchTopology
    let daemonPath: String
    let directory: String
    let loop: MainLoop
    var busPID: Int32 = 0
    var daemonPID: Int32 = 0
    /// What StatusChanged carried; what PropertiesChanged carried of Nat64Prefix, Connectivity and Blame.
    var status = SignalledValue()
    var prefix = SignalledValue()
    var connectivity = SignalledValue()
    var blame = SignalledValue()
    /// More of the daemon's command line (the portal bench's --ca-file).
    var extraArguments = ""
    /// Environment for the daemon ("NAME=value " each).
    var extraEnvironment = ""
    var connection: BusConnection?

    init(daemonPath: String, chain: Bool = false) throws {
        self.daemonPath = daemonPath
        topology = BenchTopology(chain ? "b" : "m", chain: chain)
        loop = try MainLoop()
        var template = Array("/tmp/netobserver-mbench-XXXXXX".utf8CString)
        directory = mkdtemp(&template).map { String(cString: $0) } ?? "/tmp"
    }

    deinit {
        stop()
        _ = system("rm -rf '\(directory)'")
    }

    func readNumber(_ path: String) -> Int32 {
        Int32(readLine(path).trimmingSpaces()) ?? 0
    }

    func readLine(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 512)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Runs the loop until StatusChanged carries `expected`; returns when it arrived.
    func waitForStatus(_ expected: String, timeout: Double = 5) -> UInt64 {
        guard let arrived = waitFor(\.status, expected, timeout: timeout) else {
            fatalError("monitor bench: no StatusChanged(\(expected)) in \(timeout) s (last \(status.last))")
        }
        return arrived
    }

    /// Runs the loop until the signals carry `expected` for `value`; when it arrived, nil after `timeout`.
    func waitFor(
        _ value: ReferenceWritableKeyPath<MonitorBench, SignalledValue>, _ expected: String, timeout: Double
    ) -> UInt64? {
        if self[keyPath: value].last == expected { return self[keyPath: value].at }
        self[keyPath: value].awaited = expected
        let arrived = runLoop(atMost: timeout)
        self[keyPath: value].awaited = nil
        return arrived ? self[keyPath: value].at : nil
    }

    func processCPUSeconds(_ pid: Int32) -> Double {
        let line = readLine("/proc/\(pid)/stat")
        guard let close = line.lastIndex(of: ")") else { return 0 }
        let fields = line[line.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func processRSS(_ pid: Int32) -> Int {
        Int(readLine("/proc/\(pid)/statm").split(separator: " ").dropFirst().first ?? "0").map {
            $0 * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
        } ?? 0
    }

    /// The detection figures alone (`netobserver-bench detection`).
    func runDetection() throws {
        try startDaemon()
        try measureDetection()
        stop()
    }

    /// The NAT64 figures alone (`netobserver-bench nat64`).
    func runNat64() throws {
        try startDaemon()
        measureNat64Prefix()
        stop()
    }

    /// Ends the daemon and the bus now (`exit` runs no deinit).
    func stop() {
        if daemonPID > 0 { kill(daemonPID, SIGTERM) }
        if busPID > 0 { kill(busPID, SIGTERM) }
        daemonPID = 0
        busPID = 0
    }

    func run() throws {
        try startDaemon()
        try measureDetection()
        measureNat64Prefix()
        try measureIdle()
    }

    /// A private bus, a client subscribed to StatusChanged and PropertiesChanged, and the daemon, until it says ethernet.
    func startDaemon() throws {
        shell(
            "dbus-daemon --session --fork --nopidfile --address=unix:path=\(directory)/bus --print-address=3 --print-pid=4 "
                + "3>\(directory)/address 4>\(directory)/bus.pid")
        busPID = readNumber("\(directory)/bus.pid")
        let address = readLine("\(directory)/address")
        let connection = try BusConnection(.address(address), loop: loop)
        self.connection = connection
        connection.addMatch("type='signal',interface='org.netobserver.Monitor',member='StatusChanged'")
        connection.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        connection.onSignal = { [unowned self] message in
            if message.isSignal(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged") {
                guard let arguments = try? message.arguments(), arguments.count == 3,
                    let changed = arguments[1].propertyMap
                else { return }
                let now = MonotonicClock.now().nanoseconds
                var awaitedCame = false
                for (name, value) in [
                    ("Connectivity", \MonitorBench.connectivity), ("Blame", \.blame), ("Nat64Prefix", \.prefix),
                ] {
                    if let carried = changed[name]?.stringValue, self[keyPath: value].arrived(carried, at: now) {
                        awaitedCame = true
                    }
                }
                if awaitedCame { loop.quit(status: 0) }
                return
            }
            guard message.isSignal(interface: "org.netobserver.Monitor", member: "StatusChanged"),
                let carried = (try? message.arguments())?.first?.stringValue
            else { return }
            if status.arrived(carried, at: MonotonicClock.now().nanoseconds) { loop.quit(status: 0) }
        }
        // Subscribed before the daemon starts: a round trip to the bus puts the match in force.
        _ = try connection.callBlocking(
            try Message.methodCall(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus", member: "GetId"),
            timeoutMilliseconds: 5000)
        // sh writes its PID, then execs ip, which execs the daemon: the PID stays the daemon's.
        shell(
            "sh -c 'echo $$ > \(directory)/daemon.pid; \(extraEnvironment.isEmpty ? "" : "export " + extraEnvironment + ";") exec ip netns exec \(topology.client) \(daemonPath) "
                + "--address \"\(address)\" --state-dir \(directory)/state --host 198.18.2.2 --interval 200 --timeout 200 "
                + extraArguments + " 2>\(directory)/daemon.log' &")
        for _ in 0..<100 where readNumber("\(directory)/daemon.pid") == 0 { usleep(10_000) }
        daemonPID = readNumber("\(directory)/daemon.pid")

        _ = waitForStatus("ethernet", timeout: 10)
    }

    func measureDetection() throws {
        let control = try inNamespace(topology.client) { try NetlinkSocket(groups: 0) }
        let index = inNamespace(topology.client) { () -> Int32 in
            Int32(if_nametoindex(topology.clientLink))
        }
        let gateway = IPAddress("198.18.0.1")!
        var sequence: UInt32 = 1
        func send(_ request: [UInt8]) {
            sequence += 1
            try? control.send(request)
            while case .datagram = control.receive() {}
        }

        var linkDown: [Double] = []
        var linkUp: [Double] = []
        var routeDeleted: [Double] = []
        for _ in 0..<50 {
            var start = MonotonicClock.now().nanoseconds
            send(NetlinkRequest.setLink(index: index, up: false, sequence: sequence))
            linkDown.append(Double(waitForStatus("none") - start) / 1000)
            start = MonotonicClock.now().nanoseconds
            send(NetlinkRequest.setLink(index: index, up: true, sequence: sequence))
            send(NetlinkRequest.defaultRoute(add: true, via: gateway, sequence: sequence))
            linkUp.append(Double(waitForStatus("ethernet") - start) / 1000)

            start = MonotonicClock.now().nanoseconds
            send(NetlinkRequest.defaultRoute(add: false, via: gateway, sequence: sequence))
            routeDeleted.append(Double(waitForStatus("none") - start) / 1000)
            send(NetlinkRequest.defaultRoute(add: true, via: gateway, sequence: sequence))
            _ = waitForStatus("ethernet")
        }
        reportMilliseconds("monitor link_down_to_StatusChanged", linkDown)
        reportMilliseconds("monitor route_deleted_to_StatusChanged", routeDeleted)
        reportMilliseconds("monitor link_and_route_up_to_StatusChanged", linkUp)

        var silent: [Double] = []
        for _ in 0..<20 {
            let phase = loop.schedule(after: .nanoseconds(UInt64(Double.random(in: 0..<0.2) * 1e9))) { [loop] in
                loop.quit(status: 0)
            }
            _ = loop.run()
            loop.cancel(phase)
            shell("ip netns exec \(topology.router) iptables -I FORWARD -d 198.18.2.2 -j DROP")
            let start = MonotonicClock.now().nanoseconds
            silent.append(Double(waitForStatus("none") - start) / 1000)
            shell("ip netns exec \(topology.router) iptables -D FORWARD -d 198.18.2.2 -j DROP")
            _ = waitForStatus("ethernet")
        }
        reportMilliseconds("monitor silent_loss_to_StatusChanged (interval 200, timeout 200, 2/1)", silent)

    }

    /// Idle at the default 1 s interval for 60 s.
    private func measureIdle() throws {
        let set = try Message.methodCall(
            destination: "org.netobserver.Monitor", path: "/org/netobserver/Monitor",
            interface: "org.freedesktop.DBus.Properties", member: "Set")
        try set.append([.string("org.netobserver.Monitor"), .string("Interval"), .variant(.uint32(1000))])
        _ = try connection?.callBlocking(set, timeoutMilliseconds: 5000)
        let rssBefore = processRSS(daemonPID)
        let cpuBefore = processCPUSeconds(daemonPID)
        let idle = loop.schedule(after: .seconds(60)) { [loop] in loop.quit(status: 0) }
        _ = loop.run()
        loop.cancel(idle)
        let cpu = processCPUSeconds(daemonPID) - cpuBefore
        print(
            "monitor idle_60s_at_1s_interval: cpu_s=" + fixed(cpu, 2) + " cpu_pct_of_core=" + fixed(100 * cpu / 60, 3)
                + " rss_before_kb=\(rssBefore) rss_after_kb=\(processRSS(daemonPID)) status=\(status.last)")
    }

    /// Runs the loop until a signal handler quits it (true) or `timeout` seconds pass (false).
    func runLoop(atMost timeout: Double) -> Bool {
        let limit = loop.schedule(after: .nanoseconds(UInt64(timeout * 1e9))) { [loop] in loop.quit(status: 1) }
        let result = loop.run()
        loop.cancel(limit)
        return result == 0
    }

    /// The router advertises a NAT64 prefix (RFC 8781 PREF64) on the client's link: how long until
    /// PropertiesChanged carries it, and how long after its lifetime's end it is dropped. The sender
    /// stamps the moment just before its sendto(2) on CLOCK_MONOTONIC, the clock the signals are stamped on.
    func measureNat64Prefix() {
        shell(
            "ip -n \(topology.client) -6 addr add fd00::2/64 dev \(topology.clientLink) nodad && "
                + "ip -n \(topology.router) -6 addr add fd00::1/64 dev \(topology.tag)r0 nodad")
        usleep(2_500_000) // the router's link-local address leaves DAD
        // The default route through the router's link-local address, as one learned from its advertisements is:
        // the advertisement's source is the route's gateway.
        let linkLocal = "\(directory)/router-link-local"
        shell(
            "ip -n \(topology.router) -6 -o addr show dev \(topology.tag)r0 scope link "
                + "| awk '{sub(\"/.*\", \"\", $4); print $4}' > \(linkLocal) && "
                + "ip -n \(topology.client) -6 route add default via $(cat \(linkLocal)) dev \(topology.clientLink)")
        let output = "\(directory)/ra.out"
        // In the background: the loop stamps the signal when it comes, not after the sender's exit.
        func advertise(_ lifetime: Int) {
            unlink(output)
            _ = system(
                "ip netns exec \(topology.router) python3 Tests/NamespaceTests/helpers/send_ra.py \(topology.tag)r0 "
                    + "pref64 2001:db8:64::/96 \(lifetime) > \(output).part 2>&1 && mv \(output).part \(output) &")
        }
        func sentAt() -> UInt64? {
            for _ in 0..<300 where access(output, F_OK) != 0 { usleep(10_000) }
            return readLine(output).split(separator: " ").last.flatMap { UInt64($0) }
        }
        var published: [Double] = []
        var dropped: [Double] = []
        for _ in 0..<10 {
            advertise(8)
            guard let seen = waitFor(\.prefix, "2001:db8:64::/96", timeout: 3) else {
                return print(
                    "monitor nat64: the prefix was not published (last PropertiesChanged said '\(prefix.last)')")
            }
            guard let sent = sentAt() else { return print("monitor nat64: the advertisement was not sent (python3?)") }
            published.append((Double(seen) - Double(sent)) / 1000)
            guard let gone = waitFor(\.prefix, "", timeout: 12) else {
                return print("monitor nat64: the prefix was not dropped")
            }
            dropped.append((Double(gone) - Double(sent + 8_000_000_000)) / 1000)
        }
        reportMilliseconds("monitor nat64_prefix_advertised_to_PropertiesChanged (goal ≤ 50 ms)", published)
        reportMilliseconds("monitor nat64_prefix_lifetime_end_to_PropertiesChanged (goal ≤ 1000 ms)", dropped)
        measureNat64AsManagersRunIt(linkLocal: readLine(linkLocal), advertise: advertise)
    }

    /// As NetworkManager and networkd run a link (issue 54): the advertisement comes before the default route it
    /// implies (published within 50 ms of the route), and a route deleted and added again changes nothing.
    func measureNat64AsManagersRunIt(linkLocal: String, advertise: (Int) -> Void) {
        func ip(_ verb: String, _ metric: Int) -> String {
            "ip -n \(topology.client) -6 route \(verb) default via \(linkLocal) dev \(topology.clientLink) metric \(metric)"
        }
        _ = system(ip("del", 1024) + " >/dev/null 2>&1")
        var afterRoute: [Double] = []
        for _ in 0..<10 {
            guard waitFor(\.prefix, "", timeout: 4) != nil else {
                return print("monitor nat64: the prefix outlived its route by more than 4 s")
            }
            advertise(600)
            usleep(300_000)
            let added = MonotonicClock.now().nanoseconds
            shell(ip("add", 1024))
            guard let seen = waitFor(\.prefix, "2001:db8:64::/96", timeout: 3) else {
                return print("monitor nat64: an advertisement before its route was never taken")
            }
            afterRoute.append((Double(seen) - Double(added)) / 1000)
            shell(ip("del", 1024))
        }
        reportMilliseconds("monitor nat64_advertised_before_route_to_PropertiesChanged (goal ≤ 50 ms)", afterRoute)
        shell(ip("add", 1024))
        advertise(600)
        _ = waitFor(\.prefix, "2001:db8:64::/96", timeout: 3)
        let before = prefix.changes
        for _ in 0..<20 {
            shell(ip("del", 1024) + " && " + ip("add", 20100))
            shell(ip("del", 20100) + " && " + ip("add", 1024))
        }
        _ = runLoop(atMost: 3)
        print("monitor nat64_route_replaced_20_times: prefix_PropertiesChanged=\(prefix.changes - before) (goal 0)")
    }

    func reportMilliseconds(_ name: String, _ microseconds: [Double]) {
        print(
            "\(name): n=\(microseconds.count) median_ms=" + fixed(percentile(microseconds, 0.5) / 1000, 2)
                + " p99_ms=" + fixed(percentile(microseconds, 0.99) / 1000, 2)
                + " max_ms=" + fixed((microseconds.max() ?? 0) / 1000, 2))
    }
}

extension String {
    func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

/// One value the daemon's signals carry: the last one, when it came, and the one a wait is for.
struct SignalledValue {
    var last = ""
    var at: UInt64 = 0
    var awaited: String?
    /// How many times a signal carried a value other than the last.
    var changes = 0

    /// `value` came at `now`: true when it is the one awaited.
    mutating func arrived(_ value: String, at now: UInt64) -> Bool {
        if value != last { changes += 1 }
        last = value
        at = now
        return value == awaited
    }
}
