// netobserver-bench: measurements that need root and network namespaces
// (`make bench` runs it). Traffic stays inside namespaces it creates and removes.
import CLinux
import EventLoop
import Glibc
import NetCore
import Reachability

func shell(_ command: String) {
    if system(command + " >/dev/null 2>&1") != 0 { fatalError("failed: \(command)") }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
}

func report(_ name: String, _ microseconds: [Double]) {
    print("reachability \(name): n=\(microseconds.count) median_us=\(Int(percentile(microseconds, 0.5)))"
          + " p99_us=\(Int(percentile(microseconds, 0.99))) max_us=\(Int(microseconds.max() ?? 0))")
}

func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func residentKilobytes() -> Int {
    let fd = open("/proc/self/statm", O_RDONLY)
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let n = read(fd, &buffer, buffer.count)
    let fields = String(decoding: buffer[..<max(0, n)], as: UTF8.self).split(separator: " ")
    return (Int(fields.count > 1 ? fields[1] : "0") ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

/// Runs `body` with this thread in the namespace `name`.
func inNamespace<T>(_ name: String, _ body: () throws -> T) rethrows -> T {
    let original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
    let target = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
    precondition(CLinux_enter_network_namespace(target) == 0, "setns")
    defer {
        _ = CLinux_enter_network_namespace(original)
        close(original)
        close(target)
    }
    return try body()
}

func fixed(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = scaled / Int(scale)
    let fraction = String(abs(scaled) % Int(scale))
    return digits == 0 ? "\(whole)" : "\(whole)." + String(repeating: "0", count: digits - fraction.count) + fraction
}

/// Kernel change → engine callback, on one loop, in namespaces made here.
final class ReachabilityBench {
    let client = "nob-c-\(getpid())"
    let router = "nob-r-\(getpid())"
    let loop: MainLoop
    var engine: ReachabilityEngine!
    var control: NetlinkSocket!
    var lastChange: UInt64 = 0
    var waitingFor: ((ReachabilityVerdict) -> Bool)?
    var index: Int32 = 0
    let gateway = IPAddress("198.18.0.1")!
    var sequence: UInt32 = 1000

    init() throws {
        loop = try MainLoop()
    }

    deinit {
        _ = system("ip netns del \(client) 2>/dev/null; ip netns del \(router) 2>/dev/null")
    }

    @discardableResult
    func waitUntil(_ predicate: @escaping (ReachabilityVerdict) -> Bool) -> UInt64 {
        if let verdict = engine.verdict, predicate(verdict) { return lastChange }
        waitingFor = predicate
        let timer = loop.schedule(after: 5_000_000_000) { [loop] in loop.quit(status: 1) }
        let status = loop.run()
        loop.cancel(timer)
        waitingFor = nil
        if status != 0 { fatalError("no verdict in 5 s; last \(String(describing: engine.verdict))") }
        return lastChange
    }

    func drain(_ socket: NetlinkSocket) {
        while case .datagram = socket.receive() {}
    }

    func restore() {
        sequence += 2
        try? control.send(NetlinkRequest.setLink(index: index, up: true, sequence: sequence))
        try? control.send(NetlinkRequest.defaultRoute(add: true, via: gateway, sequence: sequence + 1))
        waitUntil { $0.usable }
        drain(control)
    }

    func measure(_ name: String, change: () throws -> Void) throws {
        var samples: [Double] = []
        for _ in 0..<50 {
            sequence += 1
            let start = MonotonicClock.now()
            try change()
            let seen = waitUntil { !$0.usable }
            samples.append(Double(seen - start) / 1000)
            restore()
        }
        report(name, samples)
    }

    func run() throws {
        shell("ip netns add \(client)")
        shell("ip netns add \(router)")
        shell("ip link add nc0 netns \(client) type veth peer name nr0 netns \(router)")
        shell("ip -n \(client) addr add 198.18.0.2/24 dev nc0 && ip -n \(client) link set nc0 up && ip -n \(client) link set lo up")
        shell("ip -n \(router) addr add 198.18.0.1/24 dev nr0 && ip -n \(router) link set nr0 up")
        shell("ip -n \(client) route add default via 198.18.0.1")
        try inNamespace(client) {
            engine = try ReachabilityEngine(loop: loop) { [unowned self] verdict in
                lastChange = MonotonicClock.now()
                if let waitingFor, waitingFor(verdict) { loop.quit(status: 0) }
            }
            control = try NetlinkSocket(groups: 0)
        }
        engine.target = IPAddress("198.18.2.2")
        waitUntil { $0.usable }
        guard let found = engine.table.links.values.first(where: { $0.name == "nc0" })?.index else { fatalError("no nc0") }
        index = found

        try measure("link_down_to_callback") {
            try control.send(NetlinkRequest.setLink(index: index, up: false, sequence: sequence))
        }
        try measure("route_deleted_to_callback") {
            try control.send(NetlinkRequest.defaultRoute(add: false, via: gateway, sequence: sequence))
        }
        try flaps()
    }

    /// 10,000 flaps from another thread; the loop thread's CPU is the engine's cost.
    func flaps() throws {
        let rssBefore = residentKilobytes()
        let cpuBefore = threadCPUSeconds()
        let before = engine.statistics
        let flapper = try WorkerThread()
        let finished = try LoopChannel<Bool>(loop: loop) { [loop] _ in loop.quit(status: 0) }
        let sender = finished.sender
        let flapIndex = index
        let clientName = client
        flapper.async {
            inNamespace(clientName) {
                guard let socket = try? NetlinkSocket(groups: 0) else { return }
                for i in 0..<10_000 {
                    try? socket.send(NetlinkRequest.setLink(index: flapIndex, up: i % 2 == 1, sequence: UInt32(i)))
                    while case .datagram = socket.receive() {}
                }
            }
            sender.send(true)
        }
        _ = loop.run()
        restore()
        let cpu = threadCPUSeconds() - cpuBefore
        let after = engine.statistics
        var line = "reachability flaps_10000: engine_cpu_s=" + fixed(cpu, 3)
        line += " cpu_us_per_flap=" + fixed(cpu * 1e6 / 10_000, 1)
        line += " rss_before_kb=\(rssBefore) rss_after_kb=\(residentKilobytes())"
        line += " lookups=\(after.lookups - before.lookups) overruns=\(after.overruns - before.overruns)"
        line += " malformed=\(after.malformed)"
        print(line)
    }
}

guard geteuid() == 0 else {
    print("netobserver-bench: needs root (network namespaces); skipped")
    exit(0)
}

try ReachabilityBench().run()
