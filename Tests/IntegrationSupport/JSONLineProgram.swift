import Foundation
import Glibc

/// A helper program that says what it sees as one JSON object a line (with `kind` and a
/// CLOCK_MONOTONIC `t`) and takes commands a line at a time on its standard input.
public final class JSONLineProgram {
    private let process = Process()
    private let input = Pipe()
    public let logPath: String

    /// Runs `arguments` (in `namespace` when given) with `environment` added to the test's.
    public init(
        _ arguments: [String], namespace: String? = nil, environment: [String: String] = [:], directory: String
    ) throws {
        logPath = directory + "/program-\(UUID().uuidString.prefix(6)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        if let namespace {
            // ip netns exec execs without forking: the PID is the program's.
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: arguments[0])
            process.arguments = Array(arguments.dropFirst())
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = input
        process.standardOutput = FileHandle(forWritingAtPath: logPath)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
    }

    deinit { stop() }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var text: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    public var events: [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    public func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// The first event after the first `skipping` that `matches`, waiting up to `timeout` seconds for it.
    public func waitFor(_ timeout: Double = 5, skipping: Int = 0, _ matches: ([String: Any]) -> Bool) -> [String: Any]?
    {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let event = events.dropFirst(skipping).first(where: matches) { return event }
            usleep(5_000)
        } while Date() < deadline && process.isRunning
        return events.dropFirst(skipping).first(where: matches)
    }

    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

/// CLOCK_MONOTONIC now, in seconds: the clock the helpers' `t` is read from.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
