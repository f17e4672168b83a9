import FoundationEssentials
import MonitorContract
import MonitorRules

/// One line per state for a status bar's persistent custom module, in that bar's own
/// format (waybar `return-type: json`; i3blocks `interval=persist` with `format=json`;
/// polybar `custom/script` with `tail = true`), or the `--json` object.
public enum MonitorFormat: String, CaseIterable, Sendable {
    case plain, json, waybar, i3blocks, polybar

    public static let barNames = allCases.filter { $0 != .plain }.map(\.rawValue)

    public func line(_ snapshot: Snapshot) -> String {
        switch self {
        case .plain: snapshot.line()
        case .json: snapshot.json()
        case .waybar:
            Self.object([
                "text": Self.markup(snapshot.barText), "tooltip": Self.markup(snapshot.tooltip("\r")),
                "class": snapshot.Status, "alt": snapshot.Connectivity,
            ])
        case .i3blocks:
            Self.object([
                "full_text": snapshot.barText, "short_text": snapshot.Status,
                "color": Self.colour(snapshot.Status),
            ])
        // polybar reads %{…} in the text as its own formatting tags (actions that run commands among them).
        case .polybar: "%{F\(Self.colour(snapshot.Status))}\(snapshot.barText.escaping(["%": "%%"]))%{F-}"
        }
    }

    /// Status colours, the usual traffic lights.
    public static func colour(_ status: String) -> String {
        switch status {
        case "none": "#E06C75"
        case "unknown", "": "#E5C07B"
        default: "#98C379"
        }
    }

    /// One JSON object on one line, keys sorted.
    private static func object(_ fields: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(fields) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// waybar reads text and tooltip as Pango markup: the service's words must not become tags.
    private static func markup(_ text: String) -> String {
        text.escaping(["&": "&amp;", "<": "&lt;", ">": "&gt;"])
    }
}

extension String {
    /// This text with each character in `replacements` written as its replacement.
    public func escaping(_ replacements: [Character: String]) -> String {
        var escaped = ""
        for character in self {
            if let replacement = replacements[character] {
                escaped += replacement
            } else {
                escaped.append(character)
            }
        }
        return escaped
    }
}

extension Snapshot {
    /// What a bar shows: the status, and the round trip while connected.
    public var barText: String {
        guard Reachable, RoundTripTime > 0 else { return Status }
        return "\(Status) \(Self.milliseconds(RoundTripTime))"
    }

    /// Host, interface, round trip, loss and reason, one per line.
    public func tooltip(_ separator: String) -> String {
        var lines = ["\(Host)" + (Address.isEmpty || Address == Host ? "" : " (\(Address))")]
        lines.append("interface: " + (Interface.isEmpty ? "—" : Interface))
        if RoundTripTime > 0 { lines.append("round trip: " + Self.milliseconds(RoundTripTime)) }
        lines.append("loss: \(Int((PacketLoss * 100).rounded())) %")
        if !Reason.isEmpty { lines.append(Reason) }
        return lines.joined(separator: separator)
    }
}
