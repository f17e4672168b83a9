import CLinux
import Foundation
import Glibc

/// Runs a shell command; throws with its output when it fails.
@discardableResult
public func sh(_ command: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else {
        throw NSError(
            domain: "sh", code: Int(process.terminationStatus),
            userInfo: [NSLocalizedDescriptionKey: "\(command): \(text)"])
    }
    return text
}

/// A network namespace this test made, deleted when released.
public final class NetworkNamespace {
    public let name: String
    public init(_ role: String) throws {
        name = "no-\(role)-\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
        try sh("ip netns add \(name)")
        try ip("link set lo up")
    }

    deinit {
        _ = try? sh("ip netns del \(name)")
    }

    public func ip(_ arguments: String) throws {
        try sh("ip -n \(name) \(arguments)")
    }

    public func exec(_ command: String) throws -> String {
        try sh("ip netns exec \(name) \(command)")
    }

    /// Moves this thread into the namespace until `leave()`: every socket opened
    /// meanwhile (including ones an engine opens per probe) lives there.
    public func enterThread() throws -> NamespaceStay {
        let original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let target = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        defer { close(target) }
        guard original >= 0, target >= 0, CLinux_enter_network_namespace(target) == 0 else {
            if original >= 0 { close(original) }
            throw NSError(domain: "setns", code: Int(errno))
        }
        return NamespaceStay(original: original)
    }

    /// Runs `body` with this thread inside the namespace: sockets it opens stay there.
    public func enter<T>(_ body: () throws -> T) throws -> T {
        let original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
        let target = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        defer { close(original); close(target) }
        guard original >= 0, target >= 0, CLinux_enter_network_namespace(target) == 0 else {
            throw NSError(domain: "setns", code: Int(errno))
        }
        defer { _ = CLinux_enter_network_namespace(original) }
        return try body()
    }
}

/// A thread's stay in a namespace; `leave()` returns it to where it was.
public final class NamespaceStay {
    private var original: Int32

    init(original: Int32) {
        self.original = original
    }

    public func leave() {
        guard original >= 0 else { return }
        _ = CLinux_enter_network_namespace(original)
        close(original)
        original = -1
    }

    deinit { leave() }
}

/// The inode of this thread's network namespace (to check where a test runs).
public func currentNetworkNamespace() -> UInt64 {
    var info = stat()
    stat("/proc/thread-self/ns/net", &info)
    return UInt64(info.st_ino)
}

extension NetworkNamespace {
    /// Lays `hosts` and `resolvConf` over /etc/hosts and /etc/resolv.conf for what runs in this
    /// namespace (`ip netns exec` takes them from /etc/netns/NAME); `forgetNames()` removes them.
    public func useNames(hosts: String, resolvConf: String) throws {
        try FileManager.default.createDirectory(atPath: "/etc/netns/\(name)", withIntermediateDirectories: true)
        try hosts.write(toFile: "/etc/netns/\(name)/hosts", atomically: true, encoding: .utf8)
        try resolvConf.write(toFile: "/etc/netns/\(name)/resolv.conf", atomically: true, encoding: .utf8)
    }

    public func forgetNames() {
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(name)")
    }
}
