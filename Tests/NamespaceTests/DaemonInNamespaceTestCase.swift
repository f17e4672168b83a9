import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// What a test of the daemon in a client namespace behind a router holds and releases: the three
/// hosts, a private bus, the daemon, a signal watcher and helper processes, stopped in that order
/// at the end; and reading and waiting for properties, saying on failure what the `alongside`
/// properties and the daemon's log said.
class DaemonInNamespaceTestCase: XCTestCase {
    var hosts: ThreeHosts!
    var bus: PrivateBus!
    var daemon: DaemonProcess?
    var watcher: SignalWatcher?
    var helpers: [Process] = []
    /// Shown beside a property that did not become what a test waited for.
    var alongside: [P] { [.reason] }

    override func tearDown() {
        watcher?.stop()
        for helper in helpers where helper.isRunning {
            helper.terminate()
            helper.waitUntilExit()
        }
        daemon?.stop()
        bus?.stop()
        hosts?.client.forgetNames()
        hosts = nil
    }

    func get(_ property: P) throws -> String { try readProperty(property, bus: bus) }

    /// Kills the process whose PID a daemon wrote to `pidFile` (dnsmasq daemonizes: no Process stands for it).
    func killProcess(namedIn pidFile: String) {
        guard
            let pid = (try? String(contentsOfFile: pidFile, encoding: .utf8))
                .flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        else { return }
        kill(pid, SIGKILL)
    }

    /// Polls until `property` reads `expected`; returns the seconds it took.
    @discardableResult
    func wait(
        _ property: P, _ expected: String, timeout: Double = 5, file: StaticString = #filePath, line: UInt = #line
    ) throws -> Double {
        if let took = try waitForProperty(property, expected, bus: bus, timeout: timeout) { return took }
        XCTFail(
            notBecoming(property, expected, within: timeout, bus: bus, alongside: alongside, log: daemon?.log ?? ""),
            file: file, line: line)
        return timeout
    }

    /// Runs `arguments` in `namespace` until the test ends; waits for `ready` on its output when asked, and
    /// throws what the helper said when it never is (a server that could not bind, say), so a test never goes
    /// on against a server that is not there.
    @discardableResult
    func run(in namespace: NetworkNamespace, _ arguments: [String], waitForReady: Bool = true) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", namespace.name] + arguments
        let log = bus.directory + "/helper-\(helpers.count).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        helpers.append(process)
        if waitForReady {
            func said() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
            for _ in 0..<300 where !said().contains("ready") { usleep(10_000) }
            guard said().contains("ready") else {
                throw NSError(
                    domain:
                        "\(arguments.joined(separator: " ")) in \(namespace.name) was not ready in 3 s; it said: \(said())",
                    code: 1)
            }
        }
        return process
    }

    @discardableResult
    func checkServer(
        in namespace: NetworkNamespace, _ address: String, _ port: Int, _ mode: String, location: String = ""
    ) throws -> Process {
        try run(
            in: namespace,
            [Paths.python, Paths.namespaceHelpers + "/check_server.py", address, "\(port)", mode, location])
    }
}
