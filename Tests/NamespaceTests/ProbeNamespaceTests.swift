import EventLoop
import Foundation
import Glibc
import IntegrationSupport
import NetAddress
import NetCore
import Probe
import ProbeRules
import TestTime
import Timekeeping
import XCTest

/// The probe engine against real hosts: client — router — server namespaces,
/// 198.18.0.0/24 and fd00::/64 on the client side, 198.18.2.0/24 and fd00:2::/64
/// on the server side. Loss and rejection are iptables rules on the router.
final class ProbeNamespaceTests: XCTestCase {
    var hosts: ThreeHosts!
    var client: NetworkNamespace!
    var router: NetworkNamespace!
    var server: NetworkNamespace!
    var loop: MainLoop!
    private var helpers: [Process] = []
    private var stay: NamespaceStay?

    let server4 = IPAddress("198.18.2.2")!
    let server6 = IPAddress("fd00:2::2")!

    override func setUpWithError() throws {
        try requireRoot()
        hosts = try ThreeHosts(tag: "p")
        client = hosts.client
        router = hosts.router
        server = hosts.server
        loop = try MainLoop()
        // From here on this thread lives in the client namespace, so no socket
        // an engine opens (ICMP, or TCP per probe) can reach the machine's network.
        let host = currentNetworkNamespace()
        stay = try client.enterThread()
        XCTAssertNotEqual(currentNetworkNamespace(), host)
    }

    override func tearDown() {
        stay?.leave()
        stay = nil
        stopHelpers()
        loop = nil
        client = nil
        router = nil
        server = nil
        hosts = nil
    }

    /// An engine whose sockets live in the client namespace. ICMP alone by default: these tests
    /// drop or delay echoes, and the ladder's TCP connections (ConnectivityNamespaceTests) would
    /// answer for the host.
    func engine(
        _ settings: ProbeSettings = ProbeSettings(intervalMilliseconds: 100, timeoutMilliseconds: 200),
        methods: Set<ProbeMethod> = [.icmpDatagram, .icmpRaw], tcpPort: UInt16 = 443,
        reports: UnsafeMutablePointer<[ProbeReport]>? = nil
    ) throws -> ProbeEngine {
        let engine = ProbeEngine(loop: loop, settings: settings, allowedMethods: methods, tcpPort: tcpPort) { report in
            reports?.pointee.append(report)
        }
        return engine
    }

    /// Sets the target (this thread is in the client namespace, so the socket opens there).
    func start(_ engine: ProbeEngine, _ target: IPAddress) throws {
        engine.target = target
    }

    /// Runs the loop until `predicate` holds (checked every 5 ms) or `timeout` seconds pass.
    @discardableResult
    func run(
        until what: String, timeout: Double = 5, file: StaticString = #filePath, line: UInt = #line,
        _ predicate: @escaping () -> Bool
    ) -> Double {
        let start = MonotonicClock.now()
        let poll = loop.schedule(after: 5 * ms, repeats: true) { [unowned self] in
            if predicate() { loop.quit(status: 0) }
        }
        let limit = loop.schedule(after: .nanoseconds(UInt64(timeout * 1e9))) { [unowned self] in loop.quit(status: 1) }
        let status = predicate() ? 0 : loop.run()
        loop.cancel(poll)
        loop.cancel(limit)
        if status != 0 { XCTFail("\(what): not within \(timeout) s", file: file, line: line) }
        return Double((MonotonicClock.now() - start).nanoseconds) / 1e9
    }

    /// Runs the loop for `seconds`.
    func spin(_ seconds: Double) {
        let timer = loop.schedule(after: .nanoseconds(UInt64(seconds * 1e9))) { [unowned self] in loop.quit(status: 0) }
        _ = loop.run()
        loop.cancel(timer)
    }

    func stopHelpers() {
        for helper in helpers where helper.isRunning {
            helper.terminate()
            helper.waitUntilExit()
        }
        helpers = []
    }

    func helper(
        _ namespace: NetworkNamespace, _ script: String, _ arguments: [String], waitForOutput: Bool = true
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "helpers/\(script)"
        ).path
        process.arguments = ["netns", "exec", namespace.name, "/usr/bin/python3", path] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        helpers.append(process)
        // Wait for its "ready" line.
        if waitForOutput { _ = output.fileHandleForReading.availableData }
    }

    func allowDatagramSockets() throws {
        _ = try client.exec("sysctl -qw net.ipv4.ping_group_range='0 2147483647'")
    }

    // MARK: Tests

    func testAnsweringHostOverRawAndDatagramSockets() throws {
        let raw = try engine()
        try start(raw, server4)
        run(until: "raw answers") { raw.report.answering == true }
        XCTAssertEqual(raw.report.method, .icmpRaw)
        XCTAssertGreaterThan(raw.report.roundTripMicroseconds, 0)
        XCTAssertEqual(raw.report.reason, "")

        try allowDatagramSockets()
        let datagram = try engine()
        try start(datagram, server4)
        run(until: "datagram answers") { datagram.report.answering == true }
        XCTAssertEqual(datagram.report.method, .icmpDatagram)
        spin(0.5)
        XCTAssertEqual(datagram.statistics.lost, 0)
        XCTAssertEqual(datagram.report.packetLoss, 0)
    }

    func testIPv6OverBothSocketKinds() throws {
        let raw = try engine()
        try start(raw, server6)
        run(until: "raw v6 answers") { raw.report.answering == true }
        XCTAssertEqual(raw.report.method, .icmpRaw)
        try allowDatagramSockets()
        let datagram = try engine()
        try start(datagram, server6)
        run(until: "datagram v6 answers") { datagram.report.answering == true }
        XCTAssertEqual(datagram.report.method, .icmpDatagram)
    }

    func testSilentLossThenHealing() throws {
        for datagram in [false, true] {
            if datagram { try allowDatagramSockets() }
            let probe = try engine(
                ProbeSettings(intervalMilliseconds: 200, timeoutMilliseconds: 200, failureThreshold: 2))
            try start(probe, server4)
            run(until: "answering") { probe.report.answering == true }
            _ = try router.exec("iptables -I FORWARD -p icmp -j DROP")
            let took = run(until: "silence noticed", timeout: 3) { probe.report.answering == false }
            XCTAssertEqual(probe.report.reason, "host not answering: 2 probes lost")
            XCTAssertLessThan(
                took, 2 * 0.2 + 0.2 + 0.3, "FailureThreshold × Interval + Timeout, with the suspicion probe")
            _ = try router.exec("iptables -D FORWARD -p icmp -j DROP")
            run(until: "healed") { probe.report.answering == true }
        }
    }

    func testProbesInFlightTogetherAreOneFailure() throws {
        // INTERFACE.md: never sooner than (FailureThreshold − 1) × min(Interval, Timeout) + Timeout after the
        // first unanswered probe was sent; here 3 × 500 + 500 = 2,000 ms. That probe goes out after the DROP.
        let probe = try engine(ProbeSettings(intervalMilliseconds: 500, timeoutMilliseconds: 500, failureThreshold: 4))
        try start(probe, server4)
        run(until: "answering") { probe.report.answering == true }
        spin(0.6) // a round trip is known, so overdue probes get their early follow-up
        _ = try router.exec("iptables -I FORWARD -p icmp -j DROP")
        let took = run(until: "silence confirmed", timeout: 5) { probe.report.answering == false }
        XCTAssertGreaterThanOrEqual(took, 2.0, "an early follow-up in flight beside a probe is not a second failure")
        XCTAssertGreaterThan(probe.statistics.early, 0, "early follow-ups went out")
        XCTAssertEqual(probe.report.reason, "host not answering: 4 probes lost")
        print("threshold 4 at 500/500: silence confirmed after \(String(format: "%.3f", took)) s, \(probe.statistics)")
    }

    func testRejectIsCountedAtOnceAndNamesTheRouter() throws {
        for datagram in [false, true] {
            if datagram { try allowDatagramSockets() }
            let probe = try engine(
                ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 3))
            try start(probe, server4)
            run(until: "answering") { probe.report.answering == true }
            _ = try router.exec("iptables -I FORWARD -p icmp --icmp-type echo-request -j REJECT")
            probe.probeNow()
            let took = run(until: "rejected", timeout: 2) { probe.report.answering == false }
            XCTAssertLessThan(took, 0.1, "one round trip, not FailureThreshold timeouts")
            XCTAssertEqual(
                probe.report.reason, "198.18.2.2 unreachable (port unreachable), said 198.18.0.1",
                datagram ? "datagram socket, from the error queue" : "raw socket, from the quoted packet")
            _ = try router.exec("iptables -D FORWARD -p icmp --icmp-type echo-request -j REJECT")
            probe.probeNow()
            run(until: "accepted again") { probe.report.answering == true }
        }
    }

    func testIPv6RejectFromTheRouter() throws {
        let probe = try engine(
            ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 3))
        try start(probe, server6)
        run(until: "answering") { probe.report.answering == true }
        _ = try router.exec("ip6tables -I FORWARD -p icmpv6 --icmpv6-type echo-request -j REJECT")
        probe.probeNow()
        run(until: "rejected", timeout: 2) { probe.report.answering == false }
        XCTAssertTrue(probe.report.reason.hasPrefix("fd00:2::2 unreachable ("), probe.report.reason)
        XCTAssertTrue(probe.report.reason.hasSuffix("said fd00::1"), probe.report.reason)
    }

    func testSendFailureIsImmediate() throws {
        let probe = try engine()
        try start(probe, server4)
        run(until: "answering") { probe.report.answering == true }
        try client.ip("route del default")
        probe.probeNow()
        run(until: "send failed", timeout: 1) { probe.report.answering == false }
        XCTAssertEqual(probe.report.reason, "cannot send to 198.18.2.2: Network is unreachable")
    }

    /// An engine that sees the server answer, after which every probe gets a Destination
    /// Unreachable quoting `quote` of it ("short": only its ICMP header; "whole": all of it).
    private func answeringThenUnreachable(quote: String) throws -> ProbeEngine {
        _ = try server.exec("sysctl -qw net.ipv4.icmp_echo_ignore_all=0")
        let probe = try engine(ProbeSettings(intervalMilliseconds: 200, timeoutMilliseconds: 1000, failureThreshold: 3))
        try start(probe, server4)
        run(until: "answering") { probe.report.answering == true }
        _ = try server.exec("sysctl -qw net.ipv4.icmp_echo_ignore_all=1")
        try helper(server, "unreachable_responder.py", [quote])
        return probe
    }

    func testAnUnreachableQuotingLessThanTheProbeCountsAsOneFailure() throws {
        for datagram in [false, true] {
            if datagram { try allowDatagramSockets() }
            let probe = try answeringThenUnreachable(quote: "short")
            run(until: "the first short error") { probe.statistics.errors >= 1 }
            XCTAssertEqual(probe.report.answering, true, "one unproven Unreachable is one failed probe, not an outage")
            run(until: "the threshold", timeout: 5) { probe.report.answering == false }
            XCTAssertGreaterThanOrEqual(probe.statistics.errors, 3, "three failures, as FailureThreshold says")
            XCTAssertTrue(
                probe.report.reason.hasPrefix("host not answering: 3 probes failed (ICMP errors from"),
                "not the forger's verdict: \(probe.report.reason)")
            probe.target = nil
            stopHelpers()

            // The control: the same error quoting the whole probe, token included, counts at once.
            let proven = try answeringThenUnreachable(quote: "whole")
            run(until: "refused at once") { proven.report.answering == false }
            XCTAssertEqual(proven.statistics.errors, 1, "the first whole-quote Unreachable decided")
            XCTAssertTrue(proven.report.reason.contains("unreachable (host unreachable)"), proven.report.reason)
            proven.target = nil
            stopHelpers()
        }
    }

    func testReplyDelayBeyondTimeoutIsTooSlowAndBelowItOnlyRaisesTheRoundTrip() throws {
        _ = try server.exec("sysctl -qw net.ipv4.icmp_echo_ignore_all=1")
        try helper(server, "slow_responder.py", ["0.3"])
        let slow = try engine(ProbeSettings(intervalMilliseconds: 100, timeoutMilliseconds: 150, failureThreshold: 2))
        try start(slow, server4)
        run(until: "too slow") { slow.report.answering == false && slow.report.reason.hasPrefix("host too slow") }
        XCTAssertTrue(slow.report.reason.hasPrefix("host too slow: no reply within 150 ms ("), slow.report.reason)
        XCTAssertGreaterThan(slow.statistics.late, 0)

        let patient = try engine(
            ProbeSettings(intervalMilliseconds: 200, timeoutMilliseconds: 1000, failureThreshold: 2))
        try start(patient, server4)
        run(until: "answering despite the delay") { patient.report.answering == true }
        XCTAssertGreaterThanOrEqual(patient.report.roundTripMicroseconds, 300_000)
        spin(1.0)
        XCTAssertEqual(patient.report.answering, true, "probes overlap (Timeout > Interval) and all answer")
    }

    func testRandomLossFlapsLessWithHigherThresholds() throws {
        _ = try router.exec(
            "iptables -I FORWARD -p icmp --icmp-type echo-request -m statistic --mode random --probability 0.3 -j DROP")
        var counts: [String: (flaps: Int, probes: Int)] = [:]
        for (failures, recoveries) in [(UInt32(2), UInt32(1)), (3, 2)] {
            var reports: [ProbeReport] = []
            let probe = try engine(
                ProbeSettings(
                    intervalMilliseconds: 50, timeoutMilliseconds: 100,
                    failureThreshold: failures, recoveryThreshold: recoveries), reports: &reports)
            try start(probe, server4)
            spin(4)
            var flaps = 0
            var last: Bool?
            for report in reports where report.answering != nil {
                if let last, last != report.answering { flaps += 1 }
                last = report.answering
            }
            counts["\(failures)/\(recoveries)"] = (flaps, probe.statistics.sent)
            probe.target = nil
            XCTAssertGreaterThan(probe.report.packetLoss, -1)
        }
        print("30 % loss for 4 s at 50 ms: flaps \(counts)")
        let low = counts["2/1"]!, high = counts["3/2"]!
        XCTAssertLessThan(high.flaps, high.probes / 4, "3/2 keeps flapping bounded")
        XCTAssertLessThan(low.flaps, low.probes / 2)
    }

    func testTwoEnginesDoNotSeeEachOthersReplies() throws {
        let first = try engine()
        let second = try engine()
        try start(first, server4)
        try start(second, IPAddress("198.18.2.3")!)
        run(until: "both answer") { first.report.answering == true && second.report.answering == true }
        _ = try router.exec("iptables -I FORWARD -d 198.18.2.3 -j DROP")
        run(until: "second silent", timeout: 3) { second.report.answering == false }
        spin(0.5)
        XCTAssertEqual(first.report.answering, true)
        XCTAssertEqual(first.statistics.lost, 0, "the first never took the other's silence, or replies, for its own")
        XCTAssertNotEqual(first.echoIdentifier, second.echoIdentifier)
        XCTAssertEqual(
            first.statistics.foreign + second.statistics.foreign, 0,
            "each raw socket's kernel filter kept the other's replies out")
    }

    func testAFloodOfForeignRepliesChangesNothing() throws {
        for datagram in [false, true] {
            if datagram { try allowDatagramSockets() }
            let probe = try engine(ProbeSettings(intervalMilliseconds: 100, timeoutMilliseconds: 500))
            try start(probe, server4)
            run(until: "answering") { probe.report.answering == true }
            // Forged replies carrying our identifier (so the kernel lets them through), for 3 s at 20,000 a
            // second: a rate the test hosts' forwarding path carries on a 2-core machine, so real replies
            // lost on the way (not in the engine) cannot decide the test.
            try helper(
                server, "foreign_flood.py", ["198.18.0.2", "3", String(probe.echoIdentifier), "20000"],
                waitForOutput: false)
            spin(1.0)
            XCTAssertEqual(probe.report.answering, true, "real replies still count through the flood")
            XCTAssertEqual(probe.statistics.lost, 0)
            // Now the real replies stop: forged ones must not keep the host answering.
            _ = try router.exec("iptables -I FORWARD -s 198.18.0.2 -p icmp --icmp-type echo-request -j DROP")
            run(until: "silence seen through the flood", timeout: 3) { probe.report.answering == false }
            XCTAssertGreaterThan(
                probe.statistics.foreign, 1000, "the forged replies reached the parser and were refused")
            print("flood (\(datagram ? "datagram" : "raw")): \(probe.statistics)")
            _ = try router.exec("iptables -D FORWARD -s 198.18.0.2 -p icmp --icmp-type echo-request -j DROP")
            probe.target = nil
            for helper in helpers where helper.isRunning { helper.waitUntilExit() }
        }
    }

    func testTheKernelFilterDropsOtherIdentifiersOnRawSockets() throws {
        let probe = try engine(ProbeSettings(intervalMilliseconds: 100, timeoutMilliseconds: 500))
        try start(probe, server4)
        run(until: "answering") { probe.report.answering == true }
        XCTAssertEqual(probe.report.method, .icmpRaw)
        try helper(server, "foreign_flood.py", ["198.18.0.2", "1"], waitForOutput: true)
        spin(0.3)
        XCTAssertLessThan(probe.statistics.foreign, 10, "random identifiers never reach user space")
        XCTAssertEqual(probe.report.answering, true)
    }

    func testTCPFallbackAgainstListeningAndClosedPorts() throws {
        try helper(server, "listener.py", ["8443"])
        let listening = try engine(methods: [.tcp], tcpPort: 8443)
        try start(listening, server4)
        run(until: "listening port answers") { listening.report.answering == true }
        XCTAssertEqual(listening.report.method, .tcp)
        let closed = try engine(methods: [.tcp], tcpPort: 8444)
        try start(closed, server4)
        run(until: "refused connection still answers") { closed.report.answering == true }
        _ = try router.exec("iptables -I FORWARD -p tcp -j DROP")
        run(until: "silent", timeout: 3) { closed.report.answering == false }
    }
}
