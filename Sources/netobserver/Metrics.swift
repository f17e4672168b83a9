import EventLoop
import Glibc
import MonitorContract

/// Every target in the Prometheus text exposition format (version 0.0.4), with the metric
/// names and labels of the contract: `host` and `target` (the object path) on every series.
enum PrometheusText {
    static func render(_ targets: [(path: String, snapshot: Snapshot)]) -> String {
        var text = ""
        func family(_ name: String, _ type: String, _ help: String,
                    _ samples: (_ labels: String, _ snapshot: Snapshot) -> [String]) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (path, snapshot) in targets {
                let labels = "host=\"\(escape(snapshot.Host))\",target=\"\(escape(path))\""
                for sample in samples(labels, snapshot) { text += name + sample + "\n" }
            }
        }
        family("netobserver_up", "gauge", "1 when the target is reachable (Status is a connected kind), else 0.") { labels, s in
            ["{\(labels)} \(s.Reachable ? 1 : 0)"]
        }
        family("netobserver_status", "gauge", "The target's Status: 1 for the current value, 0 for the others.") { labels, s in
            MonitorContract.Status.allCases.map { "{\(labels),status=\"\($0.rawValue)\"} \(s.Status == $0.rawValue ? 1 : 0)" }
        }
        family("netobserver_connectivity", "gauge", "The target's Connectivity: 1 for the current value, 0 for the others.") { labels, s in
            MonitorContract.Connectivity.allCases.map {
                "{\(labels),connectivity=\"\($0.rawValue)\"} \(s.Connectivity == $0.rawValue ? 1 : 0)"
            }
        }
        family("netobserver_round_trip_seconds", "gauge", "The last successful round trip to the target.") { labels, s in
            ["{\(labels)} \(number(Double(s.RoundTripTime) / 1e6))"]
        }
        family("netobserver_packet_loss_ratio", "gauge", "Share of the last 20 probes that failed.") { labels, s in
            ["{\(labels)} \(number(s.PacketLoss))"]
        }
        family("netobserver_last_change_timestamp_seconds", "gauge", "When Status last changed, Unix time.") { labels, s in
            ["{\(labels)} \(number(Double(s.LastChange) / 1e6))"]
        }
        family("netobserver_probes_sent_total", "counter", "Probes sent to the target since the service started.") { labels, s in
            ["{\(labels)} \(s.ProbesSent)"]
        }
        family("netobserver_probes_answered_total", "counter", "Probes the target answered since the service started.") { labels, s in
            ["{\(labels)} \(s.ProbesAnswered)"]
        }
        return text
    }

    /// Label values escape backslash, double quote and newline.
    static func escape(_ value: String) -> String {
        value.escaping(["\\": "\\\\", "\"": "\\\"", "\n": "\\n"])
    }

    /// A sample value: integers without a fraction, others as Swift prints them (a Go float).
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "NaN" : (value > 0 ? "+Inf" : "-Inf") }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

/// Writes a file the way the node_exporter textfile collector needs: a temporary file in
/// the same directory (not ending in .prom), then rename(2), so a reader sees the old
/// file or the new one, never part of one. The textfile directory may be shared: the
/// temporary name is random and created exclusively (never a file or link someone
/// planted), and the file is 0644 whatever the umask.
struct TextfileWriter {
    let path: String

    struct Failure: Error {
        let message: String
    }

    func write(_ text: String) throws(Failure) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var temporary = ""
        do throws(SystemError) {
            var opened: Descriptor?
            // A clash with another file is a planted or leftover one: another random name, a few times.
            for _ in 0..<8 where opened == nil {
                temporary = (directory.isEmpty ? "" : directory + "/") + ".\(name).\(Self.randomSuffix()).tmp"
                do throws(SystemError) {
                    opened = try Syscall.descriptor("open") {
                        open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
                    }
                } catch where error.errno == EEXIST {
                    continue
                }
            }
            guard let file = opened else { throw SystemError("open", errno: EEXIST) }
            do throws(SystemError) {
                _ = try Syscall.retrying("fchmod") { fchmod(file.raw, 0o644) }
                var rest = Array(text.utf8)[...]
                while !rest.isEmpty {
                    let written = try Syscall.retrying("write") { rest.withUnsafeBytes { Glibc.write(file.raw, $0.baseAddress, $0.count) } }
                    rest = rest.dropFirst(written)
                }
                try file.close()
            } catch {
                unlink(temporary)
                throw error
            }
        } catch {
            throw Failure(message: "cannot write \(temporary.isEmpty ? path : temporary): \(error)")
        }
        guard rename(temporary, path) == 0 else {
            let message = "cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))"
            unlink(temporary)
            throw Failure(message: message)
        }
    }

    /// 16 hex digits from the system's random source.
    private static func randomSuffix() -> String {
        let hex = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
