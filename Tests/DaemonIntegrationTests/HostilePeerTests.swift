import Foundation
import IntegrationSupport
import XCTest

/// INTERFACE.md "The client believes only the service" and "Files are written as the state
/// file is", tried as another local user would (clients/hostile_client.py).
final class HostileClientTests: DaemonTestCase {
    private func hostile(_ group: String, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try python("hostile_client.py", [Paths.client, group] + extra, timeout: 60, file: file, line: line)
        print(output.split(separator: "\n").filter { $0.hasPrefix("ok") }.joined(separator: "\n"))
    }

    func testForgedSignalsToTheClientAreNotPrinted() throws { try hostile("spoof") }

    func testAPlantedTemporaryFileIsNeverTheMetrics() throws {
        let directory = bus.directory + "/textfile-shared"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o1777])
        try hostile("planted", [directory])
    }
}

/// A stand-in service owns the name and says hostile things: no daemon here.
final class HostileServiceTests: XCTestCase {
    func testWhatTheClientPrintsCarriesNoMarkupNorControlCharacters() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let outcome = try runCommand([Paths.python, Paths.clients + "/hostile_client.py", bus.address, Paths.client, "fake"],
                                     environment: bus.environment, timeout: 60)
        XCTAssertEqual(outcome.status, 0, outcome.stdout + outcome.stderr)
    }
}
