import Foundation
import IntegrationSupport
import MonitorContract
import MonitorRules
import XCTest

/// `netobserver monitor --format …` and `netobserver metrics` against a running daemon.
final class StatusBarAndMetricsTests: DaemonTestCase {
    private func client(_ arguments: [String]) throws -> Outcome {
        try runCommand([Paths.client, "--address", bus.address] + arguments)
    }

    private func get(_ property: P) throws -> String {
        let out = try busctl(["get-property", Self.destination, Self.path, Self.interface, property.name]).stdout
        // `s "none"` → none; `t 42` → 42
        let value = out.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ", maxSplits: 1).last ?? ""
        return String(value).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }

    /// The samples of `metrics` output, by metric name and labels.
    private func samples(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            result[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        return result
    }

    func testMetricsPassPromtoolAndMatchThePropertiesReadAtTheSameMoment() throws {
        // Hold the counters still: no probe for an hour from now.
        XCTAssertEqual(try set(.interval, "3600000").status, 0)
        usleep(200_000)
        let metrics = try client(["metrics"])
        XCTAssertEqual(metrics.status, 0, metrics.stderr)
        let check = try runCommand(["sh", "-c", "promtool check metrics < \"$0\"", try file(metrics.stdout)])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)

        let values = samples(metrics.stdout)
        let labels = "host=\"\(try get(.host))\",target=\"\(MonitorContract.objectPath)\""
        XCTAssertEqual(values["netobserver_up{\(labels)}"], try get(.reachable) == "true" ? "1" : "0")
        for status in MonitorContract.Status.allCases {
            XCTAssertEqual(
                values["netobserver_status{\(labels),status=\"\(status.rawValue)\"}"],
                status.rawValue == (try get(.status)) ? "1" : "0", status.rawValue)
        }
        for connectivity in MonitorContract.Connectivity.allCases {
            XCTAssertEqual(
                values["netobserver_connectivity{\(labels),connectivity=\"\(connectivity.rawValue)\"}"],
                connectivity.rawValue == (try get(.connectivity)) ? "1" : "0", connectivity.rawValue)
        }
        for (family, property) in [("ipv4", P.connectivity4), ("ipv6", P.connectivity6)] {
            let current = try get(property)
            XCTAssertFalse(current.isEmpty)
            for connectivity in MonitorContract.Connectivity.allCases {
                XCTAssertEqual(
                    values[
                        "netobserver_connectivity_family{\(labels),family=\"\(family)\",connectivity=\"\(connectivity.rawValue)\"}"
                    ],
                    connectivity.rawValue == current ? "1" : "0", "\(family) \(connectivity.rawValue)")
            }
        }
        XCTAssertEqual(values["netobserver_probes_sent_total{\(labels)}"], try get(.probesSent))
        XCTAssertEqual(values["netobserver_probes_answered_total{\(labels)}"], try get(.probesAnswered))
        XCTAssertEqual(values["netobserver_probes_skipped_total{\(labels)}"], try get(.probesSkipped))
        for word in ["idle", "flowing", "stalled"] {
            XCTAssertEqual(
                values["netobserver_traffic{\(labels),traffic=\"\(word)\"}"], word == (try get(.traffic)) ? "1" : "0",
                word)
        }
        XCTAssertEqual(
            values["netobserver_packet_loss_ratio{\(labels)}"].flatMap(Double.init), Double(try get(.packetLoss)))
        let lastChange = try XCTUnwrap(
            values["netobserver_last_change_timestamp_seconds{\(labels)}"].flatMap(Double.init))
        XCTAssertEqual(lastChange, (Double(try get(.lastChange)) ?? 0) / 1e6, accuracy: 1e-6)
        XCTAssertGreaterThan(Int(try get(.probesSent)) ?? 0, 0, "probes fail to send here, and count")
        for blame in ["link", "gateway", "upstream", "host", "dns", "portal", "check"] {
            XCTAssertEqual(
                values["netobserver_blame{\(labels),blame=\"\(blame)\"}"], blame == (try get(.blame)) ? "1" : "0", blame
            )
            XCTAssertEqual(values["netobserver_outages_total{\(labels),blame=\"\(blame)\"}"], "0", blame)
        }
        for connectivity in MonitorContract.Connectivity.allCases {
            XCTAssertNotNil(
                values["netobserver_connectivity_seconds_total{\(labels),connectivity=\"\(connectivity.rawValue)\"}"]
                    .flatMap(UInt64.init), connectivity.rawValue)
        }
        XCTAssertEqual(values["netobserver_asleep_seconds_total{\(labels)}"], "0")
    }

    private func file(_ text: String) throws -> String {
        let path = bus.directory + "/metrics-\(UUID().uuidString).txt"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testTheTextfileIsNeverSeenPartWritten() throws {
        let directory = bus.directory + "/textfile"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        print(try python("textfile.py", [Paths.client, directory], timeout: 120))
        let check = try runCommand(["sh", "-c", "promtool check metrics < \"$0\"", directory + "/netobserver.prom"])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
    }

    /// Runs `monitor` with `arguments` until `lines` lines arrived (or 10 s passed), doing `then` after the first.
    private func monitorLines(_ arguments: [String], lines: Int, then: () throws -> Void) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.client)
        process.arguments = ["--address", bus.address, "monitor"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() }; process.waitUntilExit() }
        var text = ""
        var didThen = false
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let got = text.split(separator: "\n", omittingEmptySubsequences: true).count
            if got >= lines { break }
            if got >= 1 && !didThen {
                didThen = true
                try then()
            }
            let chunk = output.fileHandleForReading.availableData
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text.split(separator: "\n").map(String.init)
    }

    func testEachBarFormatPrintsOneParsableLinePerChange() throws {
        for (format, keys) in [
            ("waybar", ["alt", "class", "text", "tooltip"]), ("i3blocks", ["color", "full_text", "short_text"]),
            ("json", MonitorContract.Property.allCases.map(\.name).sorted()),
        ] {
            let host = "example-\(format).test"
            let lines = try monitorLines(["--format", format], lines: 2) {
                XCTAssertEqual(try set(.host, host).status, 0)
            }
            XCTAssertGreaterThanOrEqual(lines.count, 2, format)
            for line in lines {
                let object = try XCTUnwrap(
                    try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
                XCTAssertEqual(object.keys.sorted(), keys, line)
            }
            if format == "waybar" {
                let first = try XCTUnwrap(
                    try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: String])
                XCTAssertEqual(first["class"], "none")
                XCTAssertTrue(
                    first["tooltip"]?.contains("\r") ?? false, "tooltip lines are separated by \\r: \(lines[0])")
                let second = try XCTUnwrap(
                    try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: String])
                XCTAssertTrue(second["tooltip"]?.hasPrefix(host) ?? false, lines[1])
            }
        }
        let polybar = try monitorLines(["--format", "polybar"], lines: 1) {}
        XCTAssertEqual(polybar.first, "%{F#E06C75}none%{F-}")
        XCTAssertEqual(try client(["monitor", "--format", "lemonbar"]).status, 2)
    }
}

/// What completions/netobserver.bash offers for `words` (the last one being completed), as bash would.
func completeInBash(_ words: [String], environment: [String: String] = [:]) throws -> Outcome {
    let script = """
        source "$0"
        COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " ")))
        COMP_CWORD=\(words.count - 1)
        _netobserver
        printf '%s\\n' "${COMPREPLY[@]}"
        """
    let completion = Paths.repository.appendingPathComponent("completions/netobserver.bash").path
    return try runCommand(["bash", "-c", script, completion], environment: environment)
}

/// The shell completions: syntax, and what they offer.
final class CompletionTests: XCTestCase {
    private let directory = Paths.repository.appendingPathComponent("completions").path

    func testEveryShellAcceptsItsCompletionFile() throws {
        for command in [
            ["bash", "-n", directory + "/netobserver.bash"], ["zsh", "-n", directory + "/_netobserver"],
            ["fish", "--no-execute", directory + "/netobserver.fish"],
        ] {
            let out = try runCommand(command)
            XCTAssertEqual(out.status, 0, "\(command): \(out.stderr)")
        }
    }

    private func bashCompletions(_ words: [String]) throws -> [String] {
        let out = try completeInBash(words)
        XCTAssertEqual(out.status, 0, out.stderr)
        return out.stdout.split(separator: "\n").map(String.init)
    }

    func testBashOffersSubcommandsSettingsAndFormats() throws {
        XCTAssertEqual(try bashCompletions(["netobserver", "s"]).sorted(), ["set", "status"])
        XCTAssertEqual(try bashCompletions(["netobserver", "--system", "m"]).sorted(), ["metrics", "monitor"])
        XCTAssertEqual(
            try bashCompletions(["netobserver", "set", ""]).sorted(),
            MonitorContract.Property.settings.compactMap(\.settingName).sorted(), "the contract's settings")
        XCTAssertEqual(
            try bashCompletions(["netobserver", "monitor", "--format", ""]).sorted(),
            ["i3blocks", "json", "polybar", "waybar"])
        XCTAssertEqual(try bashCompletions(["netobserver", "set", "family", ""]).sorted(), ["any", "ipv4", "ipv6"])
        XCTAssertEqual(try bashCompletions(["netobserver", "set", "check-echo", ""]).sorted(), ["false", "true"])
        XCTAssertEqual(try bashCompletions(["netobserver", "h"]).sorted(), ["help", "history"])
        XCTAssertEqual(try bashCompletions(["netobserver", "history", ""]).sorted(), ["--json", "--limit"])
    }
}
