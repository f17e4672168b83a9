import Foundation
import Glibc

/// systemd-resolved itself (Debian's package, unpacked by `make test`, never installed) in a test's network
/// namespace: in a mount namespace of its own, where its configuration, its run directory, its user
/// (laid over /etc/passwd there) and, when given, a test CA as the system's trust store are the test's;
/// on a bus of its own (started in that mount namespace, so it knows resolved's user), which stands for
/// the system bus: `busAddress` is what DBUS_SYSTEM_BUS_ADDRESS says to the daemon under test.
public final class ResolvedInNamespace {
    public let directory: String
    public let busAddress: String
    private var process = Process()
    /// The bus, a process of its own in a mount namespace of its own with the same user laid over /etc/passwd: a
    /// daemon forked from resolved's shell would keep that shell's end-of-life descriptor open, and Foundation would
    /// wait for the shell until the bus ended.
    private let busProcess = Process()
    private let namespace: String
    private let uid: UInt32
    private let trust: String?

    /// The unpacked binary: $NETOBSERVER_RESOLVED (set by `make test`), else where `make test` unpacks it.
    public static var binary: String {
        if let path = ProcessInfo.processInfo.environment["NETOBSERVER_RESOLVED"], !path.isEmpty { return path }
        return Paths.repository.appendingPathComponent(".build/resolved/root/lib/systemd/systemd-resolved").path
    }

    /// `configuration`: resolved.conf's [Resolve] lines. `trust`: a PEM file to stand for the system's authorities.
    public init(namespace: String, configuration: String, trust: String? = nil) throws {
        directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("netobserver-resolved-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory + "/etc", withIntermediateDirectories: true)
        chmod(directory, 0o755)
        self.namespace = namespace
        self.trust = trust
        uid = Self.freeID()
        let passwd = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)
        try (passwd + "systemd-resolve:x:\(uid):\(uid):resolved:/:/usr/sbin/nologin\n")
            .write(toFile: directory + "/passwd", atomically: true, encoding: .utf8)
        let group = try String(contentsOfFile: "/etc/group", encoding: .utf8)
        try (group + "systemd-resolve:x:\(uid):\n").write(
            toFile: directory + "/group", atomically: true, encoding: .utf8)
        busAddress = "unix:path=\(directory)/bus"
        try """
        <busconfig>
          <type>system</type>
          <listen>\(busAddress)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        busProcess.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        busProcess.arguments = [
            "netns", "exec", namespace, "unshare", "-m", "/bin/sh", "-c",
            "mount --bind \(directory)/passwd /etc/passwd && mount --bind \(directory)/group /etc/group && "
                + "exec dbus-daemon --nofork --nopidfile --nosyslog --config-file=\(directory)/bus.conf",
        ]
        busProcess.standardOutput = FileHandle.nullDevice
        busProcess.standardError = FileHandle.nullDevice
        try busProcess.run()
        for _ in 0..<300 where !FileManager.default.fileExists(atPath: directory + "/bus") { usleep(10_000) }
        try launch(configuration)
    }

    /// A new resolved with `configuration` on the same bus (the machine joined another network, say): what the
    /// old one learned of its servers is gone.
    public func restart(_ configuration: String) throws {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        // The old one's name is let go before the new one is looked for.
        for _ in 0..<200 {
            let owned = try? runCommand(
                [
                    "busctl", "--address=\(busAddress)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                    "org.freedesktop.DBus", "NameHasOwner", "s", "org.freedesktop.resolve1",
                ], timeout: 2)
            if owned?.stdout.contains("false") == true { break }
            usleep(10_000)
        }
        process = Process()
        try launch(configuration)
    }

    private func launch(_ configuration: String) throws {
        try "[Resolve]\nLLMNR=no\nMulticastDNS=no\nDNSSEC=no\n\(configuration)\n"
            .write(toFile: directory + "/etc/resolved.conf", atomically: true, encoding: .utf8)
        let trustMount = trust.map { "mount --bind \($0) /etc/ssl/certs/ca-certificates.crt && " } ?? ""
        let script = """
            mount -t tmpfs tmpfs /run/systemd && mount --bind \(directory)/etc /etc/systemd && \
            mount --bind \(directory)/passwd /etc/passwd && mount --bind \(directory)/group /etc/group && \
            \(trustMount)mkdir -p /run/systemd/resolve && chown \(uid):\(uid) /run/systemd/resolve && \
            { SYSTEMD_LOG_LEVEL=debug DBUS_SYSTEM_BUS_ADDRESS=\(busAddress) \(Self.binary) & } && \
            child=$! && trap 'kill $child' TERM && wait $child
            """
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", namespace, "unshare", "-m", "/bin/sh", "-c", script]
        _ = FileManager.default.createFile(atPath: directory + "/resolved.log", contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: directory + "/resolved.log")
        process.standardError = FileHandle(forWritingAtPath: directory + "/resolved.log")
        try process.run()
        for _ in 0..<500 {
            if let owner = try? runCommand(
                [
                    "busctl", "--address=\(busAddress)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                    "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", "org.freedesktop.resolve1",
                ], timeout: 2), owner.status == 0
            {
                return
            }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        stop()
        throw NSError(domain: "systemd-resolved did not come up: \(log)", code: 1)
    }

    public var log: String { (try? String(contentsOfFile: directory + "/resolved.log", encoding: .utf8)) ?? "" }

    /// An ID no user or group of this machine has.
    private static func freeID() -> UInt32 {
        var id: UInt32 = 64_990
        while getpwuid(id) != nil || getgrgid(id) != nil { id -= 1 }
        return id
    }

    /// `name`'s IPv4 addresses as an application asks resolved for them (its cache allowed): a test fills the cache so.
    public func resolve(_ name: String) throws -> Outcome {
        try runCommand(
            [
                "busctl", "--address=\(busAddress)", "call", "org.freedesktop.resolve1", "/org/freedesktop/resolve1",
                "org.freedesktop.resolve1.Manager", "ResolveHostname", "isit", "0", name, "2", "0",
            ], timeout: 10)
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        if busProcess.isRunning {
            kill(busProcess.processIdentifier, SIGTERM)
            busProcess.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }
}
