import Foundation
import IntegrationSupport
import XCTest

/// The service as a distribution runs it: systemd 252 as PID 1 in namespaces of its own, over the
/// files `make install DESTDIR=` puts in place (staged by make test), and over a fresh root into which apt installs the
/// package `make deb` built (tools/systemd-lane/run.sh). Every check INTERFACE.md's "Installed as a
/// distribution ships it" lists must be reported, and reported passed.
final class SystemdLaneTests: XCTestCase {
    /// What the lane checks over the installed files.
    static let checks = [
        "boot", "service-active", "no-failed-unit", "user", "netdev-group", "daemon-privileges", "helper-privileges",
        "exposure", "footprint", "get-as-user", "set-denied-to-user", "set-allowed-to-netdev", "wait-online",
        "restart-leaves-wait-online", "bus-activation", "watchdog", "condition-online", "condition-offline",
        "wait-online-offline", "wait-online-again", "still-no-failed-unit", "poweroff", "nothing-left",
    ]
    /// And over the package, besides: installed, enabled as a Debian package enables, purged.
    static let packageChecks = checks + ["package-installed", "gio-module-cached", "package-enables", "package-purged"]

    func testTheInstalledFilesUnderSystemdAsPID1() throws {
        try requireRoot()
        // Staged by make test: the lane cannot run `make install` itself while `swift test` holds the build's lock.
        let stage = try setByMakeTest("NETOBSERVER_LANE_STAGE", "the staged install")
        try runLane(arguments: ["--staged", stage], expecting: Self.checks)
    }

    func testTheDebianPackageInstalledAndPurgedUnderSystemdAsPID1() throws {
        try requireRoot()
        let package = try setByMakeTest("NETOBSERVER_DEB", "the package make deb built")
        try runLane(arguments: ["--deb", package], expecting: Self.packageChecks)
    }

    /// What make test puts in `variable`; without it the test skips, and fails under CI=true.
    private func setByMakeTest(_ variable: String, _ what: String) throws -> String {
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty { return value }
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail("\(variable) is not set: make test sets it to \(what)")
        }
        throw XCTSkip("\(variable) is not set: make test sets it to \(what)")
    }

    private func runLane(arguments: [String], expecting checks: [String]) throws {
        let script = Paths.repository.appendingPathComponent("tools/systemd-lane/run.sh").path
        let outcome = try runCommand(["bash", script] + arguments, timeout: 240)
        if outcome.status == 77 {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                XCTFail("the systemd lane cannot run in CI: \(outcome.stderr)")
            }
            throw XCTSkip(outcome.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // The figures go to the log: docs/TESTING.md and the issues quote them.
        print(outcome.stdout)
        var reported: [String: Bool] = [:]
        for line in outcome.stdout.split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 2)
            guard words.count >= 2, words[0] == "ok" || words[0] == "FAIL", words[1].hasSuffix(":") else { continue }
            let name = String(words[1].dropLast())
            reported[name] = words[0] == "ok"
            if words[0] == "FAIL" { XCTFail(String(line)) }
        }
        for check in checks {
            XCTAssertNotNil(reported[check], "the lane reported no check \(check)")
        }
        XCTAssertEqual(outcome.status, 0, "the lane failed: \(outcome.stderr.suffix(2000))")
    }
}
