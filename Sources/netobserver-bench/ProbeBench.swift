import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import Probe
import ProbeRules
import Timekeeping

/// Probe engine figures in client — router — server namespaces made here.
final class ProbeBench {
    let topology = BenchTopology("p")
    var client: String { topology.client }
    var router: String { topology.router }
    var server: String { topology.server }
    let loop: MainLoop
    let target = IPAddress("198.18.2.2")!

    init() throws {
        loop = try MainLoop()
    }

    /// Runs the loop until `predicate` holds; returns when (monotonic ns).
    func runUntil(_ timeout: Double = 5, _ predicate: @escaping () -> Bool) -> UInt64 {
        if predicate() { return MonotonicClock.now().nanoseconds }
        var seen: UInt64 = 0
        let poll = loop.schedule(after: .milliseconds(1), repeats: true) { [loop] in
            if predicate() {
                seen = MonotonicClock.now().nanoseconds
                loop.quit(status: 0)
            }
        }
        let limit = loop.schedule(after: .nanoseconds(UInt64(timeout * 1e9))) { [loop] in loop.quit(status: 1) }
        let status = loop.run()
        loop.cancel(poll)
        loop.cancel(limit)
        if status != 0 { fatalError("probe bench: condition not met in \(timeout) s") }
        return seen
    }

    func run() throws {
        // Every socket the engine opens from here on is in the client namespace.
        let original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let namespace = open("/run/netns/\(client)", O_RDONLY | O_CLOEXEC)
        precondition(CLinux_enter_network_namespace(namespace) == 0)
        defer {
            _ = CLinux_enter_network_namespace(original)
            close(original)
            close(namespace)
        }
        try silentLoss()
        try icmpError()
        try cpuPerProbe()
        try foreignFlood()
    }

    func silentLoss() throws {
        let engine = ProbeEngine(
            loop: loop,
            settings: ProbeSettings(
                intervalMilliseconds: 200, timeoutMilliseconds: 200,
                failureThreshold: 2, recoveryThreshold: 1)
        ) { _ in }
        engine.target = target
        var samples: [Double] = []
        for _ in 0..<20 {
            _ = runUntil { engine.report.answering == true }
            // The fault starts at a random point of the probe cycle, as real ones do. The host goes
            // silent to the echo and the ladder's TCP connection alike.
            spin(Double.random(in: 0..<0.2))
            shell("ip netns exec \(router) iptables -I FORWARD -d 198.18.2.2 -j DROP")
            let start = MonotonicClock.now().nanoseconds
            let seen = runUntil { engine.report.answering == false }
            samples.append(Double(seen - start) / 1000)
            shell("ip netns exec \(router) iptables -D FORWARD -d 198.18.2.2 -j DROP")
        }
        report2("probe silent_loss_to_verdict (interval 200 ms, timeout 200 ms, threshold 2)", samples)
    }

    func icmpError() throws {
        let engine = ProbeEngine(
            loop: loop,
            settings: ProbeSettings(
                intervalMilliseconds: 1000, timeoutMilliseconds: 1000,
                failureThreshold: 3)
        ) { _ in }
        engine.target = target
        var samples: [Double] = []
        var roundTrips: [Double] = []
        for _ in 0..<20 {
            _ = runUntil { engine.report.answering == true }
            roundTrips.append(Double(engine.report.roundTripMicroseconds))
            shell("ip netns exec \(router) iptables -I FORWARD -p icmp --icmp-type echo-request -j REJECT")
            var seen: UInt64 = 0
            engine.onProbeFinished = { [loop] in
                if engine.report.answering == false {
                    seen = MonotonicClock.now().nanoseconds
                    loop.quit(status: 0)
                }
            }
            let start = MonotonicClock.now().nanoseconds
            engine.probeNow()
            _ = loop.run()
            engine.onProbeFinished = nil
            samples.append(Double(seen - start) / 1000)
            shell("ip netns exec \(router) iptables -D FORWARD -p icmp --icmp-type echo-request -j REJECT")
            engine.probeNow()
        }
        report2(
            "probe icmp_error_to_verdict (probe sent → verdict; rtt median \(Int(percentile(roundTrips, 0.5))) µs)",
            samples)
    }

    func spin(_ seconds: Double) {
        let timer = loop.schedule(after: .nanoseconds(UInt64(seconds * 1e9))) { [loop] in loop.quit(status: 0) }
        _ = loop.run()
        loop.cancel(timer)
    }

    /// The loop thread's user and system CPU. System time includes the kernel
    /// carrying each probe across the veth pairs, router and server here.
    func threadTimes() -> (user: Double, system: Double) {
        var usage = rusage()
        _ = CLinux_thread_usage(&usage)
        return (
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
            Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        )
    }

    func cpuPerProbe() throws {
        let engine = ProbeEngine(
            loop: loop, settings: ProbeSettings(intervalMilliseconds: 2, timeoutMilliseconds: 1000)
        ) { _ in }
        engine.target = target
        _ = runUntil { engine.report.answering == true }
        var finished = 0
        engine.onProbeFinished = { [loop] in
            finished += 1
            if finished == 2000 { loop.quit(status: 0) }
        }
        let before = threadTimes()
        _ = loop.run()
        let after = threadTimes()
        print(
            "probe cpu_per_probe: probes=2000 user_us_per_probe=" + fixed((after.user - before.user) * 1e6 / 2000, 1)
                + " system_us_per_probe=" + fixed((after.system - before.system) * 1e6 / 2000, 1)
                + " (system includes the simulated network path)")
        engine.target = nil
    }

    func foreignFlood() throws {
        let engine = ProbeEngine(
            loop: loop, settings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000)
        ) { _ in }
        engine.target = target
        _ = runUntil { engine.report.answering == true }
        let flooder = try WorkerThread()
        let serverName = server
        let seconds = 3.0
        flooder.async {
            floodForeignReplies(
                namespace: serverName, to: IPAddress("198.18.0.2")!, perSecond: 10_000, seconds: seconds)
        }
        let foreignBefore = engine.statistics.foreign
        let cpu = threadCPUSeconds()
        spin(seconds)
        let used = threadCPUSeconds() - cpu
        flooder.drain()
        let received = engine.statistics.foreign - foreignBefore
        print(
            "probe foreign_flood: rate_pps=10000 seconds=\(Int(seconds)) foreign_seen=\(received)"
                + " loop_thread_cpu_pct=" + fixed(100 * used / seconds, 2)
                + " answering=\(engine.report.answering == true) lost=\(engine.statistics.lost)")
    }

    func report2(_ name: String, _ microseconds: [Double]) {
        print(
            "\(name): n=\(microseconds.count) median_ms=" + fixed(percentile(microseconds, 0.5) / 1000, 1)
                + " p99_ms=" + fixed(percentile(microseconds, 0.99) / 1000, 1)
                + " min_ms=" + fixed((microseconds.min() ?? 0) / 1000, 1) + " max_ms="
                + fixed((microseconds.max() ?? 0) / 1000, 1))
    }
}

/// Sends forged echo replies (random identifier, sequence, payload) at a fixed rate, from `namespace`.
func floodForeignReplies(namespace: String, to address: IPAddress, perSecond: Int, seconds: Double) {
    let target = open("/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
    guard target >= 0, CLinux_enter_network_namespace(target) == 0 else { return }
    close(target)
    let fd = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_ICMP))
    guard fd >= 0 else { return }
    defer { close(fd) }
    let total = Int(Double(perSecond) * seconds)
    let start = MonotonicClock.now().nanoseconds
    for i in 0..<total {
        var packet = EchoPacket.request(
            family: .v4, identifier: .random(in: 0...UInt16.max), sequence: UInt16(truncatingIfNeeded: i),
            token: .random(in: 0...UInt64.max))
        packet[0] = 0
        packet[2] = 0
        packet[3] = 0
        let checksum = InternetChecksum.compute(packet)
        packet[2] = UInt8(checksum >> 8)
        packet[3] = UInt8(checksum & 0xFF)
        _ = packet.withUnsafeBytes { bytes in
            address.withSocketAddress { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, $1) }
        }
        // Pace to the rate: sleep until this packet's slot.
        let due = start + UInt64(Double(i + 1) * 1e9 / Double(perSecond))
        let now = MonotonicClock.now().nanoseconds
        if due > now { usleep(UInt32((due - now) / 1000)) }
    }
}
