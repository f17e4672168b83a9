import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import Probe
import Reachability
import ReachabilityRules
import Timekeeping

/// Kernel change → engine callback, on one loop, in namespaces made here.
final class ReachabilityBench {
    let client = "nob-c-\(getpid())"
    let router = "nob-r-\(getpid())"
    let loop: MainLoop
    var engine: ReachabilityEngine!
    var watch: ReachabilityEngine.Watch!
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
        if let verdict = watch.verdict, predicate(verdict) { return lastChange }
        waitingFor = predicate
        let timer = loop.schedule(after: .seconds(5)) { [loop] in loop.quit(status: 1) }
        let status = loop.run()
        loop.cancel(timer)
        waitingFor = nil
        if status != 0 { fatalError("no verdict in 5 s; last \(String(describing: watch.verdict))") }
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
            let start = MonotonicClock.now().nanoseconds
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
        shell(
            "ip -n \(client) addr add 198.18.0.2/24 dev nc0 && ip -n \(client) link set nc0 up && ip -n \(client) link set lo up"
        )
        shell("ip -n \(router) addr add 198.18.0.1/24 dev nr0 && ip -n \(router) link set nr0 up")
        shell("ip -n \(client) route add default via 198.18.0.1")
        try inNamespace(client) {
            engine = try ReachabilityEngine(loop: loop)
            watch = engine.watch()
            watch.onChange = { [unowned self] verdict in
                lastChange = MonotonicClock.now().nanoseconds
                if let waitingFor, waitingFor(verdict) { loop.quit(status: 0) }
            }
            control = try NetlinkSocket(groups: 0)
        }
        watch.target = IPAddress("198.18.2.2")
        waitUntil { $0.usable }
        guard let found = engine.table.links.values.first(where: { $0.name == "nc0" })?.index else {
            fatalError("no nc0")
        }
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
