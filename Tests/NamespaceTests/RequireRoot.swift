import Foundation
import Glibc
import XCTest

/// Skips without root, except under CI=true where a skip is a failure.
func requireRoot() throws {
    guard geteuid() != 0 else { return }
    if ProcessInfo.processInfo.environment["CI"] == "true" {
        XCTFail("network namespace tests need root, and CI runs as root")
    }
    throw XCTSkip("network namespace tests need root; skipped as uid \(geteuid())")
}

/// Skips when `path` (a tool the test runs) is missing, except under CI=true, where `make test` installs it.
func requireTool(_ path: String) throws {
    guard !FileManager.default.isExecutableFile(atPath: path) else { return }
    let name = URL(fileURLWithPath: path).lastPathComponent
    if ProcessInfo.processInfo.environment["CI"] == "true" {
        XCTFail("\(name) is not installed (make test installs it)")
    }
    throw XCTSkip("\(name) is not installed")
}
