import Foundation
import Glibc

/// What a finished command left behind.
public struct Outcome {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Paths the integration tests use.
public enum Paths {
    static let supportDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    public static let repository = supportDirectory.deletingLastPathComponent().deletingLastPathComponent()
    public static let clients = repository.appendingPathComponent("Tests/DaemonIntegrationTests/clients").path
    public static let namespaceHelpers = repository.appendingPathComponent("Tests/NamespaceTests/helpers").path
    public static let interfaceXML = repository.appendingPathComponent("dbus/org.netobserver.Monitor.xml").path

    /// The daemon binary: $NETOBSERVERD (set by `make test`), else the debug build.
    public static var daemon: String {
        if let path = ProcessInfo.processInfo.environment["NETOBSERVERD"], !path.isEmpty { return path }
        return repository.appendingPathComponent(".build/debug/netobserverd").path
    }

    /// The client, beside the daemon.
    public static var client: String {
        URL(fileURLWithPath: daemon).deletingLastPathComponent().appendingPathComponent("netobserver").path
    }

    /// Debian's python, which has python3-dbus and python3-gi (not a pyenv one).
    public static let python = "/usr/bin/python3"
    /// Where `make` builds the GIO module: GIO_EXTRA_MODULES for GLib programs under test.
    public static let gioModules = repository.appendingPathComponent(".build/gio").path
}

/// Runs a command to completion, with a deadline.
public func runCommand(
    _ argv: [String], environment: [String: String] = [:], timeout: TimeInterval = 30
) throws -> Outcome {
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
    DispatchQueue.global().async {
        outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave()
    }
    group.enter()
    DispatchQueue.global().async {
        errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(5000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        group.wait()
        throw NSError(
            domain: "timeout", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(argv) ran past \(timeout) s"])
    }
    process.waitUntilExit()
    group.wait()
    return Outcome(
        status: process.terminationStatus,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// A private dbus-daemon on a socket in a temporary directory, stopped by its PID.
public final class PrivateBus {
    public let directory: String
    /// Its address as it printed it (with its guid): a new one after `restart`.
    public private(set) var address: String
    private var process: Process
    private var arguments: [String] = []

    /// The socket's address without the bus's guid: what a client that must reach a restarted bus uses.
    public var socketAddress: String { "unix:path=\(directory)/bus" }

    /// `anyUser`: a bus every user may connect to (for daemons and clients run as other users).
    /// `systemPolicy`: instead, the system bus's own configuration plus this policy file (as root).
    /// `serviceDirectory`: a bus that activates the services whose files are there, and no others.
    public init(anyUser: Bool = false, systemPolicy: String? = nil, serviceDirectory: String? = nil) throws {
        directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("netobserver-test-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let addressFile = directory + "/address"
        _ = FileManager.default.createFile(atPath: addressFile, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        var configuration = ["--session"]
        if anyUser || serviceDirectory != nil {
            let file = directory + "/bus.conf"
            try Self.sessionConfiguration(
                socket: "\(directory)/bus", anyUser: anyUser, serviceDirectory: serviceDirectory
            )
            .write(toFile: file, atomically: true, encoding: .utf8)
            configuration = ["--config-file=\(file)"]
            if anyUser { chmod(directory, 0o755) }
        }
        if let systemPolicy {
            let file = directory + "/bus.conf"
            try """
            <busconfig>
              <include>/usr/share/dbus-1/system.conf</include>
              <include>\(systemPolicy)</include>
            </busconfig>
            """.write(toFile: file, atomically: true, encoding: .utf8)
            configuration = ["--config-file=\(file)"]
            chmod(directory, 0o755)
        }
        process.arguments =
            configuration + [
                "--nofork", "--nopidfile", "--nosyslog",
                "--address=unix:path=\(directory)/bus", "--print-address=1",
            ]
        arguments = process.arguments ?? []
        process.standardOutput = FileHandle(forWritingAtPath: addressFile)
        process.standardError = FileHandle.nullDevice
        try process.run()
        var found = ""
        for _ in 0..<500 {
            found =
                (try? String(contentsOfFile: addressFile, encoding: .utf8))?
                .split(separator: "\n").first.map(String.init) ?? ""
            if !found.isEmpty { break }
            usleep(10_000)
        }
        guard !found.isEmpty else { throw NSError(domain: "dbus-daemon did not start", code: 1) }
        address = found
    }

    /// A session bus of the test's own: every user may connect with `anyUser`; it activates only
    /// the services in `serviceDirectory`, when given.
    private static func sessionConfiguration(socket: String, anyUser: Bool, serviceDirectory: String?) -> String {
        """
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
        \(serviceDirectory.map { "  <servicedir>\($0)</servicedir>\n" } ?? "")  <policy context="default">
        \(anyUser ? "    <allow user=\"*\"/>\n" : "")    <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    public var pid: Int32 { process.processIdentifier }

    /// Stops the bus without removing its directory: every connection to it is lost.
    public func halt() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory + "/bus")
    }

    /// A new dbus-daemon on the same socket (and configuration).
    public func restart() throws {
        halt()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = arguments
        let addressFile = directory + "/address-restarted"
        _ = FileManager.default.createFile(atPath: addressFile, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: addressFile)
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 {
            let printed =
                (try? String(contentsOfFile: addressFile, encoding: .utf8))?.split(separator: "\n").first.map(
                    String.init) ?? ""
            if !printed.isEmpty {
                address = printed
                return
            }
            usleep(10_000)
        }
        throw NSError(domain: "dbus-daemon did not start again", code: 1)
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }

    /// Environment for clients that read the session bus address.
    public var environment: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": address, "DBUS_SYSTEM_BUS_ADDRESS": address]
    }
}

/// A netobserverd process on a bus, its stderr kept in a file.
public final class DaemonProcess {
    public let process = Process()
    public let logPath: String
    /// The resolv.conf laid for the daemon's namespace when the test gave none (removed at stop).
    private var laidNames: String?

    /// Starts the daemon on `bus`: in `namespace` (a test host) when given, else in a
    /// network namespace of its own with only loopback. `host` is what it probes.
    public init(
        bus: PrivateBus, arguments: [String] = [], stateDirectory: String? = nil, waitForName: Bool = true,
        namespace: String? = nil, host: String = "198.18.0.1", environment: [String: String] = [:],
        launcher: [String] = []
    ) throws {
        // ModemManager and NetworkManager are looked for on the test's own bus, never the machine's.
        process.environment = ProcessInfo.processInfo.environment
            .merging(["DBUS_SYSTEM_BUS_ADDRESS": bus.address]) { $1 }.merging(environment) { $1 }
        logPath = bus.directory + "/daemon-\(UUID().uuidString.prefix(6)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        // The daemon really resolves and probes, so it runs in a network namespace of
        // its own with only loopback: nothing a test sets can reach any network.
        // (unshare execs without forking, so the PID is the daemon's.)
        let daemonArguments =
            [
                "--address", bus.address, "--state-dir", stateDirectory ?? bus.directory + "/state",
                "--host", host,
            ] + arguments
        if let namespace {
            // DNS truth asks the resolver of /etc/resolv.conf: in a test's namespace, never the machine's. A test that
            // gives the namespace no resolver of its own gets its loopback, where nothing answers.
            let names = "/etc/netns/\(namespace)"
            if !FileManager.default.fileExists(atPath: names + "/resolv.conf") {
                try FileManager.default.createDirectory(atPath: names, withIntermediateDirectories: true)
                try "nameserver 127.0.0.1\n".write(toFile: names + "/resolv.conf", atomically: true, encoding: .utf8)
                laidNames = names
            }
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace, Paths.daemon] + daemonArguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            // `launcher` (a program that execs the rest) goes between the shell and the daemon.
            let command = launcher + [Paths.daemon] + daemonArguments
            process.arguments =
                (geteuid() == 0 ? ["--net"] : ["--net", "--map-root-user"])
                + ["/bin/sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""] + command
        }
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        if waitForName {
            try waitUntil("serving")
            // The first verdict (in the empty namespace: no route to 198.18.0.1).
            if !arguments.contains("--replace") { try waitUntil("status ") }
        }
    }

    public var pid: Int32 { process.processIdentifier }
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits until the log contains `text` (or the daemon exits).
    public func waitUntil(_ text: String, timeout: TimeInterval = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if log.contains(text) { return }
            if !process.isRunning { break }
            usleep(5000)
        }
        throw NSError(domain: "daemon", code: 1, userInfo: [NSLocalizedDescriptionKey: "no '\(text)' in log: \(log)"])
    }

    /// Waits for exit and returns the status, or nil after the timeout.
    public func waitForExit(timeout: TimeInterval = 5) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            if waitForExit() == nil { kill(process.processIdentifier, SIGKILL) }
        }
        if let laidNames { try? FileManager.default.removeItem(atPath: laidNames) }
        laidNames = nil
    }

    deinit { stop() }

    /// utime + stime in seconds, from /proc: the daemon's and its blocking helper's, which does its work.
    public var cpuSeconds: Double {
        ([pid] + helperPIDs).map(Self.cpuSeconds(of:)).reduce(0, +)
    }

    /// The daemon's children: its blocking helper (`netobserverd --blocking-helper`), when one runs.
    public var helperPIDs: [Int32] {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return children.split(separator: " ").compactMap { Int32($0) }
    }

    private static func cpuSeconds(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The memory the daemon holds of its own, in kB: RssAnon + RssShmem (VmRSS less the file pages of code and
    /// constants, which the daemon lets go after start-up and which come back from the file as they are used).
    public var ownMemoryKilobytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        var total = 0
        for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") || line.hasPrefix("RssShmem:") {
            total += Int(line.split(separator: " ")[1]) ?? 0
        }
        return total
    }
}
