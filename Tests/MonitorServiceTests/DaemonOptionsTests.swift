import MonitorService
import TestTime
import Timekeeping
import XCTest

final class DaemonOptionsTests: XCTestCase {
    private func run(_ arguments: [String]) throws -> DaemonOptions {
        guard case .run(let options) = try DaemonOptions.parse(arguments) else {
            throw XCTSkip("not a run outcome")
        }
        return options
    }

    private func usageError(_ arguments: [String]) -> String {
        do {
            _ = try DaemonOptions.parse(arguments)
            return ""
        } catch {
            return error.message
        }
    }

    func testThePortalTruthFlags() throws {
        let options = try run([
            "--check-url", "http://198.18.2.2/204", "--secure-check-url", "https://198.18.2.2/204", "--check-echo",
            "--ca-file", "/etc/netobserver/ca.pem",
        ])
        XCTAssertEqual(options.settings.secureCheckURL, "https://198.18.2.2/204")
        XCTAssertTrue(options.settings.secureCheckURLMayPointInward, "the administrator's URL may point anywhere")
        XCTAssertTrue(options.settings.checkEcho)
        XCTAssertEqual(options.caFile, "/etc/netobserver/ca.pem")
        XCTAssertEqual(options.flagged, [.checkURL, .secureCheckURL, .checkEcho])
        XCTAssertFalse(try run(["--check-echo=false"]).settings.checkEcho)
        XCTAssertTrue(usageError(["--secure-check-url", "http://198.18.2.2/204"]).contains("is not valid"))
        XCTAssertTrue(usageError(["--ca-file", "ca.pem"]).contains("not an absolute path"))
        XCTAssertTrue(usageError(["--check-echo=maybe"]).contains("is not valid"))
    }

    func testEveryFlag() throws {
        let options = try run([
            "--address", "unix:path=/tmp/x", "--host", "198.18.0.1", "--interval=200", "--timeout", "150",
            "--failures", "3", "--recoveries", "2", "--family", "ipv4", "--state-dir", "/tmp/s",
            "--user", "netobserver", "--replace", "--verbose",
        ])
        XCTAssertEqual(options.bus, .address("unix:path=/tmp/x"))
        XCTAssertEqual(options.settings.host, "198.18.0.1")
        XCTAssertEqual(options.settings.interval, 200)
        XCTAssertEqual(options.settings.timeout, 150)
        XCTAssertEqual(options.settings.failureThreshold, 3)
        XCTAssertEqual(options.settings.recoveryThreshold, 2)
        XCTAssertEqual(options.settings.family, .ipv4)
        XCTAssertEqual(options.flagged, [.host, .interval, .timeout, .failureThreshold, .recoveryThreshold, .family])
        XCTAssertEqual(options.stateDirectory, "/tmp/s")
        XCTAssertEqual(options.user, "netobserver")
        XCTAssertTrue(options.replace)
        XCTAssertTrue(options.verbose)
        XCTAssertEqual(try run(["--system"]).bus, .system)
        XCTAssertEqual(try run([]).bus, .session)
        XCTAssertEqual(try DaemonOptions.parse(["--help"]), .help)
        XCTAssertEqual(try DaemonOptions.parse(["--version"]), .version)
    }

    func testUsageErrorsNameTheFlagAndRange() {
        XCTAssertEqual(usageError(["--interval", "50"]), "--interval: 50 is out of range (accepted: 100–3600000 ms)")
        XCTAssertEqual(usageError(["--timeout", "x"]), "--timeout: 'x' is not a number (accepted: 10–60000 ms)")
        XCTAssertEqual(usageError(["--failures", "101"]), "--failures: 101 is out of range (accepted: 1–100)")
        XCTAssertEqual(usageError(["--recoveries", "0"]), "--recoveries: 0 is out of range (accepted: 1–100)")
        XCTAssertEqual(usageError(["--family", "ipx"]), "--family: 'ipx' is not valid (accepted: any, ipv4, ipv6)")
        XCTAssertTrue(usageError(["--host", "a b"]).hasPrefix("--host: 'a b' is not valid"))
        XCTAssertEqual(usageError(["--bogus"]), "unknown option '--bogus' (see --help)")
        XCTAssertEqual(usageError(["--host"]), "--host needs a value")
        XCTAssertEqual(usageError(["--system", "--session"]), "--session conflicts with --system: give one bus")
        XCTAssertEqual(usageError(["--state-dir", "relative"]), "--state-dir: 'relative' is not an absolute path")
        XCTAssertEqual(usageError(["--replace=yes"]), "--replace takes no value")
    }

    func testDefaultStateDirectory() throws {
        var options = DaemonOptions()
        XCTAssertEqual(
            options.defaultStateDirectory { ["XDG_STATE_HOME": "/x/state", "HOME": "/h"][$0] }, "/x/state/netobserver")
        XCTAssertEqual(options.defaultStateDirectory { ["HOME": "/h"][$0] }, "/h/.local/state/netobserver")
        XCTAssertNil(options.defaultStateDirectory { _ in nil })
        options.bus = .system
        XCTAssertEqual(options.defaultStateDirectory { _ in nil }, "/var/lib/netobserver")
    }
}
