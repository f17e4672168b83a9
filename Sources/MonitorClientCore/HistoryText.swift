import DBusKit
import FoundationEssentials
import Glibc
import MonitorContract

/// `netobserver history`: GetHistory's outages as lines people read ("2026-12-03 18:02:11  4 min 12 s
/// upstream  limited  Reason") or as JSON, and the share of time `full` from TimeInState.
public enum HistoryText {
    public struct Entry: Equatable, Encodable, Sendable {
        /// CLOCK_REALTIME µs and µs, as the service gives them.
        public var start: UInt64
        public var duration: UInt64
        public var blame: String
        public var connectivity: String
        public var reason: String
    }

    /// GetHistory's reply; entries of any other shape are left out, control characters made harmless.
    public static func entries(_ reply: [DBusValue]) -> [Entry] {
        guard case .array(_, let items)? = reply.first else { return [] }
        return items.compactMap { item in
            guard case .structure(let fields) = item, fields.count == 5, case .uint64(let start) = fields[0],
                case .uint64(let duration) = fields[1], let blame = fields[2].stringValue,
                let worst = fields[3].stringValue,
                let reason = fields[4].stringValue
            else { return nil }
            return Entry(
                start: start, duration: duration, blame: Snapshot.withoutControlCharacters(blame),
                connectivity: Snapshot.withoutControlCharacters(worst),
                reason: Snapshot.withoutControlCharacters(reason))
        }
    }

    /// The share of awake time `full`, 0…1; nil before any time was counted.
    public static func fullShare(_ times: [String: UInt64]) -> Double? {
        let awake = times.filter { $0.key != "asleep" }.values.reduce(UInt64(0), &+)
        guard awake > 0 else { return nil }
        return Double(times["full"] ?? 0) / Double(awake)
    }

    public static func text(_ entries: [Entry], times: [String: UInt64]) -> String {
        var lines = entries.map { entry in
            [
                date(entry.start), duration(entry.duration), entry.blame.isEmpty ? "—" : entry.blame,
                entry.connectivity, entry.reason,
            ]
            .joined(separator: "  ")
        }
        if entries.isEmpty { lines.append("No outages.") }
        if let share = fullShare(times) {
            let percent = (share * 1000).rounded() / 10
            let asleep = times["asleep"] ?? 0
            lines.append(
                "Full \(percent) % of the time awake" + (asleep > 0 ? " (asleep \(duration(asleep * 1_000_000)))" : ""))
        }
        return lines.joined(separator: "\n")
    }

    public static func json(_ entries: [Entry], times: [String: UInt64]) -> String {
        struct Document: Encodable {
            var outages: [Entry]
            var timeInState: [String: UInt64]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(Document(outages: entries, timeInState: times)) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// "4 min 12 s", "2 h 5 min", "800 ms".
    public static func duration(_ microseconds: UInt64) -> String {
        let seconds = microseconds / 1_000_000
        if seconds == 0 { return "\(microseconds / 1000) ms" }
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        if seconds < 86_400 { return "\(seconds / 3600) h \(seconds % 3600 / 60) min" }
        return "\(seconds / 86_400) d \(seconds % 86_400 / 3600) h"
    }

    /// Local time, "2026-12-03 18:02:11".
    static func date(_ microseconds: UInt64) -> String {
        Snapshot.formatted(microseconds, "%Y-%m-%d %H:%M:%S", local: true)
    }
}
