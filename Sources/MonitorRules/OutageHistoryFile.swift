import Timekeeping

/// The history file's text (one per target in the state directory), written and read strictly, its times in
/// microseconds (the instants on CLOCK_REALTIME, since the epoch):
///
///     netobserver-history 1
///     began <µs>
///     spent <connectivity|asleep> <µs>
///     outage <start µs> <duration µs> <blame|-> <worst> <reason…>
///
/// Anything else — an unknown line, a bad number, a word not in the contract, more outages than
/// kept — makes the whole file corrupt (the service sets it aside and starts afresh).
public enum OutageHistoryFile {
    public static let header = "netobserver-history 1"
    /// Larger than any history the service writes (1,000 outages with Reasons of ≤ 512 bytes).
    public static let maximumSize = 640 * 1024
    static let maximumReason = 512

    public struct Corrupt: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public static func encode(_ history: OutageHistory) -> String {
        var text = encodeTimeInState(history)
        for outage in history.outages {
            text +=
                "outage \(outage.start.microseconds) \(outage.duration.microseconds) \(outage.blame.isEmpty ? "-" : outage.blame) "
            text += "\(outage.worst.rawValue) "
            text += clean(outage.reason) + "\n"
        }
        return text
    }

    /// The history's head alone — when it began and the time in each value, a few hundred bytes — in the same
    /// format: what is written every 10 s, beside the whole file written only when the outages change.
    public static func encodeTimeInState(_ history: OutageHistory) -> String {
        var text = header + "\n" + "began \(history.began.microseconds)\n"
        for key in Connectivity.allCases.map(\.rawValue) + [OutageHistory.asleep] {
            if let value = history.spent[key] { text += "spent \(key) \(value.microseconds)\n" }
        }
        return text
    }

    /// Larger than any time-in-state file: a header, `began` and six values.
    public static let maximumTimeInStateSize = 4 * 1024

    /// A Reason on one line, within the bound.
    static func clean(_ reason: String) -> String {
        var line = String(reason.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : Character($0) })
        if line.utf8.count > maximumReason {
            line = String(decoding: line.utf8.prefix(maximumReason), as: UTF8.self)
        }
        return line
    }

    public static func decode(_ bytes: ArraySlice<UInt8>, minimumOutage: Duration) throws(Corrupt) -> OutageHistory {
        guard bytes.count <= maximumSize else { throw Corrupt(description: "larger than \(maximumSize / 1024) KiB") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Corrupt(description: "not UTF-8") }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard lines.first == Substring(header) else { throw Corrupt(description: "no \"\(header)\" header") }
        var began: WallTime?
        var spent: [String: Duration] = [:]
        var outages: [Outage] = []
        let keys = Set(Connectivity.allCases.map(\.rawValue) + [OutageHistory.asleep])
        let blames = Set(Blame.allCases.map(\.rawValue))
        for (index, line) in lines.enumerated().dropFirst() {
            let number = index + 1
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: false)
            switch fields.first {
            case "began":
                guard fields.count == 2, began == nil, let value = microseconds(fields[1]) else {
                    throw Corrupt(description: "line \(number): bad began")
                }
                began = WallTime(sinceEpoch: value)
            case "spent":
                guard fields.count == 3, keys.contains(String(fields[1])), spent[String(fields[1])] == nil,
                    let value = microseconds(fields[2])
                else { throw Corrupt(description: "line \(number): bad spent") }
                spent[String(fields[1])] = value
            case "outage":
                guard fields.count >= 5, let start = microseconds(fields[1]), let duration = microseconds(fields[2]),
                    fields[3] == "-" || blames.contains(String(fields[3])),
                    let worst = Connectivity(rawValue: String(fields[4])), worst != .full, worst != .unknown,
                    outages.count < OutageHistory.maximumOutages
                else { throw Corrupt(description: "line \(number): bad outage") }
                let reason = fields.count == 6 ? String(fields[5]) : ""
                guard reason.utf8.count <= maximumReason, reason == clean(reason) else {
                    throw Corrupt(description: "line \(number): bad reason")
                }
                outages.append(
                    Outage(
                        start: WallTime(sinceEpoch: start), duration: duration,
                        blame: fields[3] == "-" ? "" : String(fields[3]), worst: worst,
                        reason: reason))
            default:
                throw Corrupt(description: "line \(number): not a history line")
            }
        }
        guard let began else { throw Corrupt(description: "no began line") }
        return OutageHistory(began: began, minimumOutage: minimumOutage, spent: spent, outages: outages)
    }

    /// A field of microseconds; nil when it is no number or longer than a Duration holds.
    private static func microseconds(_ field: Substring) -> Duration? {
        UInt64(field).flatMap { Duration.microseconds(exactly: $0) }
    }
}
