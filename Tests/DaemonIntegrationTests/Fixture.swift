import Foundation
import XCTest

/// What a finished command left behind.
struct Outcome {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Paths the integration tests use.
enum Paths {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let clients = testsDirectory.appendingPathComponent("clients").path
    static let repository = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
    static let interfaceXML = repository.appendingPathComponent("dbus/org.netobserver.Monitor.xml").path

    /// The daemon binary: $NETOBSERVERD (set by `make test`), else the debug build.
    static var daemon: String {
        if let path = ProcessInfo.processInfo.environment["NETOBSERVERD"], !path.isEmpty { return path }
        return repository.appendingPathComponent(".build/debug/netobserverd").path
    }

    /// Debian's python, which has python3-dbus and python3-gi (not a pyenv one).
    static let python = "/usr/bin/python3"
}

/// Runs a command to completion, with a deadline.
func runCommand(_ argv: [String], environment: [String: String] = [:], timeout: TimeInterval = 30) throws -> Outcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = argv
    var env = ProcessInfo.processInfo.environment
    env.merge(environment) { $1 }
    process.environment = env
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Drain both pipes while it runs, so a chatty command cannot block.
    nonisolated(unsafe) var outData = Data()
    nonisolated(unsafe) var errData = Data()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    group.enter()
    DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(5000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        group.wait()
        throw NSError(domain: "timeout", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(argv) ran past \(timeout) s"])
    }
    process.waitUntilExit()
    group.wait()
    return Outcome(status: process.terminationStatus,
                   stdout: String(decoding: outData, as: UTF8.self),
                   stderr: String(decoding: errData, as: UTF8.self))
}

/// A private dbus-daemon on a socket in a temporary directory, stopped by its PID.
final class PrivateBus {
    let directory: String
    let address: String
    private let process: Process

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("netobserver-test-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let addressFile = directory + "/address"
        _ = FileManager.default.createFile(atPath: addressFile, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--nosyslog",
                             "--address=unix:path=\(directory)/bus", "--print-address=1"]
        process.standardOutput = FileHandle(forWritingAtPath: addressFile)
        process.standardError = FileHandle.nullDevice
        try process.run()
        var found = ""
        for _ in 0..<500 {
            found = (try? String(contentsOfFile: addressFile, encoding: .utf8))?
                .split(separator: "\n").first.map(String.init) ?? ""
            if !found.isEmpty { break }
            usleep(10_000)
        }
        guard !found.isEmpty else { throw NSError(domain: "dbus-daemon did not start", code: 1) }
        address = found
    }

    var pid: Int32 { process.processIdentifier }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }

    /// Environment for clients that read the session bus address.
    var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address, "DBUS_SYSTEM_BUS_ADDRESS": address] }
}

/// A netobserverd process on a bus, its stderr kept in a file.
final class DaemonProcess {
    let process = Process()
    let logPath: String

    init(bus: PrivateBus, arguments: [String] = [], stateDirectory: String? = nil, waitForName: Bool = true) throws {
        logPath = bus.directory + "/daemon-\(UUID().uuidString.prefix(6)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        // The daemon really resolves and probes, so it runs in a network namespace of
        // its own with only loopback: nothing a test sets can reach any network.
        // (unshare execs without forking, so the PID is the daemon's.)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = (geteuid() == 0 ? ["--net"] : ["--net", "--map-root-user"])
            + ["/bin/sh", "-c", "ip link set lo up && exec \"$0\" \"$@\"", Paths.daemon,
               "--address", bus.address, "--state-dir", stateDirectory ?? bus.directory + "/state",
               "--host", "198.18.0.1"] + arguments
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        if waitForName {
            try waitUntil("serving")
            // The first verdict: no route to 198.18.0.1 in that empty namespace.
            if !arguments.contains("--replace") { try waitUntil("status ") }
        }
    }

    var pid: Int32 { process.processIdentifier }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits until the log contains `text` (or the daemon exits).
    func waitUntil(_ text: String, timeout: TimeInterval = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if log.contains(text) { return }
            if !process.isRunning { break }
            usleep(5000)
        }
        throw NSError(domain: "daemon", code: 1, userInfo: [NSLocalizedDescriptionKey: "no '\(text)' in log: \(log)"])
    }

    /// Waits for exit and returns the status, or nil after the timeout.
    func waitForExit(timeout: TimeInterval = 5) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            if waitForExit() == nil { kill(process.processIdentifier, SIGKILL) }
        }
    }

    deinit { stop() }

    /// utime + stime in seconds, from /proc.
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// VmRSS in kB.
    var rssKilobytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ")[1]) ?? 0
        }
        return 0
    }
}

/// A bus and a daemon on it, set up and torn down around each test.
class DaemonTestCase: XCTestCase {
    var bus: PrivateBus!
    var daemon: DaemonProcess!

    /// Extra daemon flags for this test class.
    var daemonArguments: [String] { [] }

    static let destination = "org.netobserver.Monitor"
    static let path = "/org/netobserver/Monitor"
    static let interface = "org.netobserver.Monitor"

    override func setUpWithError() throws {
        bus = try PrivateBus()
        daemon = try DaemonProcess(bus: bus, arguments: daemonArguments)
    }

    override func tearDown() {
        daemon?.stop()
        bus?.stop()
    }

    func busctl(_ arguments: [String]) throws -> Outcome {
        try runCommand(["busctl", "--address=\(bus.address)"] + arguments)
    }

    func gdbus(_ arguments: [String]) throws -> Outcome {
        try runCommand(["gdbus"] + arguments, environment: bus.environment)
    }

    /// Runs clients/<script> with the bus address and extra arguments; its stdout is returned on success.
    @discardableResult
    func python(_ script: String, _ arguments: [String] = [], timeout: TimeInterval = 60,
                file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let outcome = try runCommand([Paths.python, Paths.clients + "/" + script, bus.address] + arguments,
                                     environment: bus.environment, timeout: timeout)
        XCTAssertEqual(outcome.status, 0, "\(script) failed:\n\(outcome.stdout)\n\(outcome.stderr)\ndaemon log:\n\(daemon?.log ?? "")",
                       file: file, line: line)
        return outcome.stdout
    }
}
