import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// Issue 54 item 5 (N29): a resolver that answers every question truncated and then holds the TCP connection the
/// stub opens silent. glibc waits on that connection with no limit of its own, so the helper's lookup lane hung for
/// good: every later lookup waited behind it, long after the resolver recovered. The daemon now puts a deadline on
/// every request it hands the helper: the lookup is answered "no answer" at the contract's 5 s, the stuck helper
/// is replaced, and the next lookup reaches the resolver as it is then.
final class MisbehavingResolverTests: DaemonInNamespaceTestCase {
    override var alongside: [P] { [.reason, .connectivity, .address] }
    var dnsmasqPIDFile: String?

    override func setUpWithError() throws {
        try requireRoot()
        try requireTool("/usr/sbin/dnsmasq")
        hosts = try ThreeHosts(tag: "mr")
        bus = try PrivateBus()
        try hosts.client.useNames(
            hosts: "127.0.0.1 localhost\n", resolvConf: "nameserver 198.18.2.2\noptions timeout:1 attempts:1\n")
    }

    override func tearDown() {
        if let dnsmasqPIDFile { killProcess(namedIn: dnsmasqPIDFile) }
        super.tearDown()
    }

    func testATruncatedAnswerAndASilentTCPConnectionHoldNoLookupPastItsLimit() throws {
        let resolver = try run(
            in: hosts.server, [Paths.python, Paths.namespaceHelpers + "/truncating_resolver.py", "198.18.2.2"])
        // The stub really does hang on it (what the daemon must bound): getent gives up only when killed.
        let stub = try runCommand(
            ["timeout", "3", "ip", "netns", "exec", hosts.client.name, "getent", "ahosts", "web.test"], timeout: 10)
        XCTAssertEqual(stub.status, 124, "glibc did not hang on the silent TCP connection: \(stub.stdout)")

        let started = Date()
        daemon = try DaemonProcess(
            bus: bus, arguments: ["--interval", "200", "--timeout", "200"], namespace: hosts.client.name,
            host: "web.test")
        try wait(.connectivity, "none", timeout: 8)
        let reason = try get(.reason)
        XCTAssertTrue(reason.contains("web.test") && reason.contains("no answer within"), reason)
        XCTAssertLessThan(Date().timeIntervalSince(started), 7.5, "the lookup outlived the contract's 5 s")
        XCTAssertTrue(daemon?.log.contains("lane did not answer") ?? false, daemon?.log ?? "")

        // The resolver recovers: the next lookup reaches it (no lane is left hanging behind the first).
        resolver.terminate()
        resolver.waitUntilExit()
        let pidFile = bus.directory + "/dnsmasq.pid"
        try sh(
            "ip netns exec \(hosts.server.name) dnsmasq --no-resolv --no-hosts --listen-address=198.18.2.2 "
                + "--bind-interfaces --user=root --pid-file=\(pidFile) --host-record=web.test,198.18.2.2")
        dnsmasqPIDFile = pidFile
        try wait(.connectivity, "full", timeout: 45)
        XCTAssertEqual(try get(.address), "198.18.2.2")
    }
}
