import Foundation
import IntegrationSupport
import XCTest

/// INTERFACE.md "The client believes only the service" and "Files are written as the state
/// file is", tried as another local user would (clients/hostile_client.py).
final class HostileClientTests: DaemonTestCase {
    private func hostile(
        _ group: String, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let output = try python(
            "hostile_client.py", [Paths.client, group] + extra, timeout: 60, file: file, line: line)
        print(output.split(separator: "\n").filter { $0.hasPrefix("ok") }.joined(separator: "\n"))
    }

    func testForgedSignalsToTheClientAreNotPrinted() throws { try hostile("spoof") }

    func testAPlantedTemporaryFileIsNeverTheMetrics() throws {
        let directory = bus.directory + "/textfile-shared"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o1777])
        try hostile("planted", [directory])
    }
}

/// A stand-in service owns the name and says hostile things: no daemon here.
final class HostileServiceTests: XCTestCase {
    func testWhatTheClientPrintsCarriesNoMarkupNorControlCharacters() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let outcome = try runCommand(
            [Paths.python, Paths.clients + "/hostile_client.py", bus.address, Paths.client, "fake"],
            environment: bus.environment, timeout: 60)
        XCTAssertEqual(outcome.status, 0, outcome.stdout + outcome.stderr)
    }
}

/// "Libraries come from the system": a library planted where LD_LIBRARY_PATH (or a run path)
/// would look first is never the libcurl the daemon loads.
final class LibraryPathTests: XCTestCase {
    func testLibcurlComesFromTheSystemWhateverTheEnvironmentSays() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let planted = bus.directory + "/planted-libs"
        try FileManager.default.createDirectory(atPath: planted, withIntermediateDirectories: true)
        // A copy of zlib's file itself (not its symbolic link), under libcurl's name.
        let copied = try runCommand([
            "sh", "-c", "cp -L \"$(/sbin/ldconfig -p | awk '/libz.so.1 / {print $NF; exit}')\" \"$0/libcurl.so.4\"",
            planted,
        ])
        XCTAssertEqual(copied.status, 0, copied.stderr)
        // Loopback answers, so the check runs at once; nothing listens on port 9, so it is refused.
        let daemon = try DaemonProcess(
            bus: bus, arguments: ["--check-url", "http://127.0.0.1:9/"], host: "127.0.0.1",
            environment: ["LD_LIBRARY_PATH": planted])
        defer { daemon.stop() }
        try daemon.waitUntil("check http://127.0.0.1:9/")
        XCTAssertFalse(daemon.log.contains("libcurl is not available"), daemon.log)
        let maps = try runCommand(["cat", "/proc/\(daemon.pid)/maps"]).stdout
        XCTAssertFalse(maps.contains(planted), "the planted library was loaded")
        XCTAssertTrue(
            maps.split(separator: "\n").contains {
                $0.contains("/libcurl.so.4") && ($0.contains(" /usr/lib") || $0.contains(" /lib"))
            },
            "the system's libcurl is loaded")
    }
}
