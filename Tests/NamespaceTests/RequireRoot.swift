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

