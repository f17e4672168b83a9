import Foundation
import MonitorContract

/// A Monitor property as busctl reads it, unquoted: `s "ethernet"` → ethernet, `t 420` → 420.
public func readProperty(_ property: P, bus: PrivateBus, path: String = MonitorContract.objectPath) throws -> String {
    let out = try runCommand([
        "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName, path,
        MonitorContract.interface, property.name,
    ])
    let value =
        out.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 1).last ?? ""
    return String(value).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
}

/// Polls `property` until it reads `expected`: the seconds it took, or nil after `timeout`.
public func waitForProperty(
    _ property: P, _ expected: String, bus: PrivateBus, path: String = MonitorContract.objectPath,
    timeout: Double
) throws -> Double? {
    let start = Date()
    while Date().timeIntervalSince(start) < timeout {
        if try readProperty(property, bus: bus, path: path) == expected { return Date().timeIntervalSince(start) }
        usleep(10_000)
    }
    return nil
}

/// watch.py on a bus: every StatusChanged and PropertiesChanged of the Monitor, as the
/// tests read them afterwards. Stopped by its PID when released.
public final class SignalWatcher {
    private let process = Process()
    private let log: String

    public init(bus: PrivateBus) throws {
        log = bus.directory + "/watch-\(UUID().uuidString.prefix(6)).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: Paths.python)
        process.arguments = [Paths.namespaceHelpers + "/watch.py", bus.address]
        process.standardOutput = FileHandle(forWritingAtPath: log)
        try process.run()
        // Subscribed before the test acts, or it would miss what it watches for: a slow start fails, never passes silently.
        for _ in 0..<1000 where !text.contains("ready") { usleep(10_000) }
        guard text.contains("ready") else {
            stop()
            throw NSError(
                domain: "watch.py", code: 1, userInfo: [NSLocalizedDescriptionKey: "watch.py was not ready within 10 s"]
            )
        }
    }

    deinit { stop() }

    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    private var text: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    private var events: [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The StatusChanged signals so far, as (status, host).
    public var statuses: [(status: String, host: String)] {
        events.filter { $0["kind"] as? String == "status" }.map {
            ($0["status"] as? String ?? "", $0["host"] as? String ?? "")
        }
    }

    /// The OutageEnded signals so far, as (start µs, duration µs, blame).
    public var outages: [(start: UInt64, duration: UInt64, blame: String)] {
        events.filter { $0["kind"] as? String == "outage" }.map {
            (
                ($0["start"] as? NSNumber)?.uint64Value ?? 0, ($0["duration"] as? NSNumber)?.uint64Value ?? 0,
                $0["blame"] as? String ?? ""
            )
        }
    }

    /// The `changed` maps of the PropertiesChanged signals so far.
    public var propertyChanges: [[String: Any]] {
        events.filter { $0["kind"] as? String == "props" }.compactMap { $0["changed"] as? [String: Any] }
    }
}

/// What a test says when `property` did not become `expected` within `timeout`: what it reads
/// instead, the properties in `alongside`, and the daemon's log.
public func notBecoming(
    _ property: P, _ expected: String, within timeout: Double, bus: PrivateBus, alongside: [P] = [.reason],
    log: String
) -> String {
    let read = { (property: P) in (try? readProperty(property, bus: bus)) ?? "?" }
    return "\(property.name) did not become '\(expected)' in \(timeout) s; it is '\(read(property))', "
        + alongside.map { "\($0.name) '\(read($0))'" }.joined(separator: ", ") + "\n" + log
}
