import EventLoop
import Foundation
import Glibc
import IntegrationSupport
import NetAddress
import NetCore
import Reachability
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// The engine against a real kernel: a client namespace with two veth links
/// to a router namespace (198.18.0.0/24 on nc0, 198.18.1.0/24 on nc1, fd00::/64 on nc0).
final class ReachabilityNamespaceTests: XCTestCase {
    var client: NetworkNamespace!
    var router: NetworkNamespace!
    var loop: MainLoop!
    var engine: ReachabilityEngine!
    /// The test's target on the engine (the engine has no target of its own).
    var watch: ReachabilityEngine.Watch!
    var verdicts: [ReachabilityVerdict] = []
    private var waiting: ((ReachabilityVerdict) -> Bool)?

    let target = IPAddress("198.18.2.2")!

    override func setUpWithError() throws {
        try requireRoot()
        client = try NetworkNamespace("client")
        router = try NetworkNamespace("router")
        for i in 0...1 {
            try sh("ip link add nc\(i) netns \(client.name) type veth peer name nr\(i) netns \(router.name)")
            try client.ip("addr add 198.18.\(i).2/24 dev nc\(i)")
            try router.ip("addr add 198.18.\(i).1/24 dev nr\(i)")
            try router.ip("link set nr\(i) up")
            try client.ip("link set nc\(i) up")
        }
        try client.ip("-6 addr add fd00::2/64 dev nc0 nodad")
        try router.ip("-6 addr add fd00::1/64 dev nr0 nodad")
        try client.ip("route add default via 198.18.0.1")
        try client.ip("-6 route add default via fd00::1")
        loop = try MainLoop()
        engine = try client.enter {
            try ReachabilityEngine(loop: loop)
        }
        watch = engine.watch()
        watch.onChange = { [unowned self] verdict in
            verdicts.append(verdict)
            if let waiting, waiting(verdict) { loop.quit(status: 0) }
        }
        watch.target = target
    }

    override func tearDown() {
        watch = nil
        engine = nil
        loop = nil
        client = nil
        router = nil
    }

    /// Runs the loop until the verdict satisfies `predicate`; fails after `timeout` seconds.
    @discardableResult
    func wait(
        _ what: String, timeout: Double = 5, file: StaticString = #filePath, line: UInt = #line,
        _ predicate: @escaping (ReachabilityVerdict) -> Bool
    ) -> ReachabilityVerdict? {
        if let verdict = watch.verdict, predicate(verdict) {
            // Already true, but let queued events in first so a stale verdict cannot pass.
            let timer = loop.schedule(after: 50_000_000) { [unowned self] in loop.quit(status: 0) }
            waiting = nil
            _ = loop.run()
            loop.cancel(timer)
            if let now = watch.verdict, predicate(now) { return now }
        }
        waiting = predicate
        let timer = loop.schedule(after: .nanoseconds(UInt64(timeout * 1e9))) { [unowned self] in loop.quit(status: 1) }
        let status = loop.run()
        loop.cancel(timer)
        waiting = nil
        if status != 0 {
            XCTFail(
                "\(what): no such verdict within \(timeout) s; last: \(String(describing: watch.verdict))", file: file,
                line: line)
            return nil
        }
        return watch.verdict
    }

    func testStartsUsableOverTheDefaultRoute() {
        let verdict = wait("initial") { $0.usable }
        var expected = ReachabilityVerdict(usable: true, interface: "nc0", kind: .ethernet, source: "198.18.0.2")
        expected.routedFamilies = verdict?.routedFamilies ?? []
        expected.gateway = IPAddress("198.18.0.1")
        expected.interfaceIndex = verdict?.interfaceIndex ?? 0
        expected.hasNeighbors = true
        expected.destination = target.bytes
        // The interface's own IPv6 networks (no NAT64 prefix may lie inside one): its fd00::2/64 among them.
        expected.onLinkIPv6 = verdict?.onLinkIPv6 ?? []
        XCTAssertTrue(
            expected.onLinkIPv6.contains(OnLinkNetwork(address: IPAddress("fd00::2")!, length: 64)),
            "\(expected.onLinkIPv6)")
        XCTAssertGreaterThan(expected.interfaceIndex, 0)
        XCTAssertEqual(verdict, expected, "the default route's next hop is the gateway, on a link with neighbours")
        XCTAssertTrue(
            verdict?.routedFamilies.contains(.v4) == true, "the verdict says which families have a default route")
        XCTAssertEqual(engine.statistics.malformed, 0)
        XCTAssertGreaterThanOrEqual(engine.table.links.count, 3)
    }

    /// A watcher that moves another watch from inside its verdict (as a target following its Host does) never
    /// enters the engine's core while its outputs are carried out: every verdict already decided is delivered
    /// first, in order, and the moved watch's verdict follows from the change.
    func testAWatcherChangingTheEngineFromAVerdictWaitsForTheVerdictsUnderWay() throws {
        wait("initial") { $0.usable }
        let other = engine.watch()
        var order: [String] = []
        other.onChange = { verdict in order.append("other \(verdict.interface)") }
        let previous = watch.onChange
        watch.onChange = { verdict in
            order.append("watch \(verdict.usable)")
            // Moved from inside the verdict: this waits for the drive under way.
            other.target = IPAddress("198.18.1.9")
            previous(verdict)
        }
        let settled = loop.schedule(after: .milliseconds(300)) { [unowned self] in loop.quit(status: 0) }
        _ = loop.run()
        loop.cancel(settled)
        order = []
        try client.ip("link set nc0 down")
        wait("down") { !$0.usable }
        try client.ip("link set nc0 up")
        try client.ip("route add default via 198.18.0.1")
        wait("up") { $0.usable }
        let settle = loop.schedule(after: .milliseconds(300)) { [unowned self] in loop.quit(status: 0) }
        _ = loop.run()
        loop.cancel(settle)
        let moved = order.firstIndex(of: "watch false") ?? order.endIndex
        let followed = order.firstIndex(of: "other nc1") ?? -1
        XCTAssertLessThan(moved, followed, "the moved watch's verdict follows the one that moved it: \(order)")
        XCTAssertEqual(other.verdict?.interface, "nc1")
        XCTAssertEqual(engine.statistics.malformed, 0)
    }

    func testLinkDownThenUp() throws {
        wait("initial") { $0.usable }
        try client.ip("link set nc0 down")
        let down = wait("down") { !$0.usable }
        XCTAssertEqual(down?.reason, "interface nc0 is down")
        XCTAssertEqual(down?.interface, "", "the kernel removed the route with the link: no Interface")
        try client.ip("link set nc0 up")
        // The kernel dropped the default route with the link; it has to come back too.
        try client.ip("route add default via 198.18.0.1")
        XCTAssertEqual(wait("up") { $0.usable }?.interface, "nc0")
    }

    func testAddressRemovedThenAdded() throws {
        wait("initial") { $0.usable }
        try client.ip("addr del 198.18.0.2/24 dev nc0")
        XCTAssertFalse(wait("address gone") { !$0.usable }?.usable ?? true)
        try client.ip("addr add 198.18.0.2/24 dev nc0")
        try client.ip("route add default via 198.18.0.1")
        XCTAssertEqual(wait("address back") { $0.usable }?.source, "198.18.0.2")
    }

    func testDefaultRouteRemovedThenRestored() throws {
        wait("initial") { $0.usable }
        try client.ip("route del default")
        XCTAssertEqual(wait("no route") { !$0.usable }?.reason, "no route to 198.18.2.2")
        try client.ip("route add default via 198.18.0.1")
        XCTAssertEqual(wait("route back") { $0.usable }?.interface, "nc0")
    }

    func testAMoreSpecificRouteSwitchesTheInterface() throws {
        wait("initial") { $0.interface == "nc0" }
        try client.ip("route add 198.18.2.0/24 via 198.18.1.1 dev nc1")
        let switched = wait("via nc1") { $0.interface == "nc1" }
        XCTAssertEqual(switched?.source, "198.18.1.2")
        XCTAssertEqual(switched?.usable, true)
        try client.ip("route del 198.18.2.0/24")
        wait("back to nc0") { $0.interface == "nc0" && $0.usable }
    }

    func testIPv6OnlyPath() throws {
        watch.target = IPAddress("fd00:2::2")
        let verdict = wait("v6") { $0.usable }
        XCTAssertEqual(verdict?.interface, "nc0")
        XCTAssertEqual(verdict?.source, "fd00::2")
        try client.ip("-6 route del default")
        XCTAssertEqual(wait("no v6 route") { !$0.usable }?.reason, "no route to fd00:2::2")
        try client.ip("route del default")
        XCTAssertFalse(watch.verdict?.usable ?? true, "IPv4 is irrelevant to an IPv6 target")
    }

    func testPolicyRoutingRule() throws {
        wait("initial") { $0.interface == "nc0" }
        try client.ip("route add 198.18.2.2 via 198.18.1.1 dev nc1 table 100")
        try client.ip("rule add to 198.18.2.2 lookup 100 pref 100")
        XCTAssertEqual(wait("rule") { $0.interface == "nc1" }?.usable, true)
        try client.ip("rule del pref 100")
        wait("rule gone") { $0.interface == "nc0" }
    }

    func testBeforeTheHostResolvesADefaultRouteDecides() throws {
        watch.target = nil
        watch.families = [.v4]
        XCTAssertEqual(wait("default route") { $0.usable }?.interface, "nc0")
        try client.ip("route del default")
        XCTAssertEqual(wait("no default") { !$0.usable }?.reason, "no IPv4 default route")
    }

    func testThousandFlapsEndInTheRightStateWithBoundedCost() throws {
        wait("initial") { $0.usable }
        let batch = FileManager.default.temporaryDirectory.appendingPathComponent("flaps-\(getpid()).batch").path
        try (String(repeating: "link set nc0 down\nlink set nc0 up\n", count: 1000) + "link set nc0 down\n")
            .write(toFile: batch, atomically: true, encoding: .utf8)
        defer { unlink(batch) }
        let rssBefore = residentKilobytes()
        let cpuBefore = cpuSeconds()
        // The loop is not running while ip works: events pile up in the socket, maybe past its buffer.
        try client.ip("-batch \(batch)")
        let verdict = wait("after flaps", timeout: 10) { !$0.usable }
        XCTAssertEqual(verdict?.reason, "interface nc0 is down")
        try client.ip("link set nc0 up")
        try client.ip("route add default via 198.18.0.1")
        wait("recovered") { $0.usable }
        let cpu = cpuSeconds() - cpuBefore
        let growth = residentKilobytes() - rssBefore
        print(
            "1000 flaps: engine CPU \(String(format: "%.3f", cpu)) s, RSS +\(growth) kB, statistics \(engine.statistics)"
        )
        XCTAssertEqual(engine.statistics.malformed, 0)
        XCTAssertLessThan(cpu, 2.0)
        XCTAssertLessThan(growth, 4096)
    }

    func testOverrunsWhileLookingUpNeverFreezeTheVerdict() throws {
        wait("initial") { $0.usable }
        let batch = FileManager.default.temporaryDirectory.appendingPathComponent("flood-\(getpid()).batch").path
        // Address and route churn: every event makes the engine ask the kernel for a route again.
        try String(repeating: "addr add 198.18.0.9/24 dev nc0\naddr del 198.18.0.9/24 dev nc0\n", count: 3000)
            .write(toFile: batch, atomically: true, encoding: .utf8)
        defer { unlink(batch) }
        for round in 1...3 {
            // The loop runs while ip floods, so route lookups are out when the socket overruns; it also
            // stalls now and then (as on a loaded machine), so events pile up past the socket buffer.
            let stall = loop.schedule(after: 3_000_000, repeats: true) { usleep(20_000) }
            let flood = Process()
            flood.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            flood.arguments = ["-n", client.name, "-batch", batch]
            try flood.run()
            let poll = loop.schedule(after: 20_000_000, repeats: true) { [unowned self] in
                if !flood.isRunning { loop.quit(status: 0) }
            }
            _ = loop.run()
            loop.cancel(poll)
            loop.cancel(stall)
            wait("round \(round): usable after the flood") { $0.usable }
            try client.ip("link set nc0 down")
            let verdict = wait("round \(round): the link going down is noticed") { !$0.usable }
            XCTAssertEqual(verdict?.reason, "interface nc0 is down")
            try client.ip("link set nc0 up")
            try client.ip("route replace default via 198.18.0.1")
            wait("round \(round): back") { $0.usable }
        }
        print("flood while looking up: \(engine.statistics)")
        XCTAssertGreaterThan(engine.statistics.overruns, 0, "the flood overran the socket at least once")
    }

    private func residentKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    private func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
