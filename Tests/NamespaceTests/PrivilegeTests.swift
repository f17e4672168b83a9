import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// Least privilege: the daemon as an unprivileged user, with CAP_NET_RAW only,
/// with datagram ICMP sockets and no capability, and with neither (TCP). Each
/// runs in a network namespace of its own with only loopback, probing 127.0.0.1.
final class PrivilegeTests: XCTestCase {
    var bus: PrivateBus!
    var daemon: Process?
    var logPath = ""

    override func setUpWithError() throws {
        try requireRoot()
        bus = try PrivateBus(anyUser: true)
        logPath = bus.directory + "/daemon.log"
    }

    override func tearDown() {
        if let daemon, daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        bus?.stop()
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts the daemon in a fresh network namespace after `setup` (shell, as root), via `launcher`.
    func start(setup: String = "", launcher: String, arguments: String = "") throws {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = [
            "--net", "/bin/sh", "-c",
            "ip link set lo up && \(setup) exec \(launcher) \"$0\" --address \"$1\" --state-dir /tmp --host 127.0.0.1 --interval 200 \(arguments)",
            Paths.daemon, bus.address,
        ]
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        daemon = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && !log.contains("status ") && process.isRunning { usleep(20_000) }
    }

    func status() throws -> String {
        try runCommand([Paths.client, "--address", bus.address, "status", "--json"]).stdout
    }

    func capabilities() -> [String: String] {
        guard let pid = daemon?.processIdentifier,
            let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        else { return [:] }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return fields
    }

    func testUserSwitchKeepsOnlyNetRaw() throws {
        try start(launcher: "", arguments: "--user nobody")
        let fields = capabilities()
        XCTAssertEqual(fields["Uid"]?.split(separator: "\t").first, "65534")
        XCTAssertEqual(fields["CapEff"], "0000000000002000", "CAP_NET_RAW alone")
        XCTAssertEqual(fields["CapPrm"], "0000000000002000")
        XCTAssertEqual(fields["CapBnd"], "0000000000002000", "nothing else can come back")
        XCTAssertEqual(fields["NoNewPrivs"], "1")
        XCTAssertTrue(log.contains("running as nobody"), log)
        XCTAssertTrue(log.contains("probing 127.0.0.1 with ICMP (raw socket)"), log)
        XCTAssertTrue(try status().contains("\"\(P.status)\":\"other\""), log)
    }

    func testUnprivilegedUserWithOnlyNetRawWorks() throws {
        try start(
            launcher:
                "setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all,+net_raw --ambient-caps=+net_raw"
        )
        XCTAssertEqual(capabilities()["CapEff"], "0000000000002000")
        XCTAssertTrue(log.contains("probing 127.0.0.1 with ICMP (raw socket)"), log)
        XCTAssertTrue(try status().contains("\"\(P.status)\":\"other\""), log)
    }

    func testNoCapabilityUsesDatagramSocketsWhereAllowed() throws {
        try start(
            setup: "sysctl -qw net.ipv4.ping_group_range='0 2147483647' &&",
            launcher: "setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all")
        XCTAssertEqual(capabilities()["CapEff"], "0000000000000000")
        XCTAssertTrue(log.contains("probing 127.0.0.1 with ICMP (datagram socket)"), log)
        XCTAssertTrue(try status().contains("\"\(P.status)\":\"other\""), log)
    }

    func testNeitherFallsBackToTCPAndSaysSo() throws {
        try start(launcher: "setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all")
        XCTAssertTrue(log.contains("probing 127.0.0.1 with TCP connect to port 443"), log)
        // A refused connection is an answer: loopback counts as reachable.
        XCTAssertTrue(try status().contains("\"\(P.status)\":\"other\""), log)
    }

    func testTheStateFileIsReadAsTheUserNotAsRoot() throws {
        // Only root may read this file: a daemon that read it before dropping to nobody would apply it.
        let state = bus.directory + "/root-only"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try "\(P.timeout)=321\n".write(toFile: state + "/settings", atomically: false, encoding: .utf8)
        XCTAssertEqual(chmod(state, 0o700), 0)
        XCTAssertEqual(chmod(state + "/settings", 0o600), 0)
        try start(launcher: "", arguments: "--user nobody --state-dir \(state)")
        XCTAssertTrue(
            log.contains(
                "\(state)/settings: open: Permission denied: left as it is (rename: Permission denied), never written over; "
                    + "starting from the defaults"), log)
        let timeout = try runCommand([
            "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName,
            MonitorContract.objectPath, MonitorContract.interface, P.timeout.name,
        ])
        XCTAssertEqual(timeout.stdout, "u 1000\n", "not read with root's rights")
    }
}
