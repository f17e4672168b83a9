import DBusKit
import FoundationEssentials
import Glibc
import MonitorContract
import MonitorRules
import ProbeRules

/// The properties as people and scripts read them: each value kept only when its type
/// is the one the contract gives the property.
public struct Snapshot: Encodable {
    private var values: [MonitorContract.Property: DBusValue] = [:]
    /// The outages in the target's history by Blame (from GetHistory; for the metrics).
    public var outageCounts: [String: UInt64] = [:]

    public init(_ values: [String: DBusValue]) {
        update(values)
    }

    /// Takes the values of the contract's types; a Status or Connectivity outside its words is
    /// ignored, and control characters in any text become U+FFFD, so nothing the service (or
    /// whoever pretends to be it) says can move a terminal's cursor or start a line of its own.
    public mutating func update(_ changed: [String: DBusValue]) {
        for (name, value) in changed {
            guard let property = MonitorContract.Property(rawValue: name), value.type == property.type else { continue }
            guard case .string(let text) = value else {
                values[property] = value
                continue
            }
            switch property {
            case .status where MonitorContract.Status(rawValue: text) == nil: continue
            case .connectivity where MonitorContract.Connectivity(rawValue: text) == nil,
                .connectivity4 where MonitorContract.Connectivity(rawValue: text) == nil,
                .connectivity6 where MonitorContract.Connectivity(rawValue: text) == nil:
                continue
            default: values[property] = .string(Self.withoutControlCharacters(text))
            }
        }
    }

    public static func withoutControlCharacters(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var clean = String.UnicodeScalarView()
        for scalar in text.unicodeScalars { clean.append(isControl(scalar) ? "\u{FFFD}" : scalar) }
        return String(clean)
    }

    /// C0, DEL and C1: the terminal's and the bars' line and escape controls.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    private func string(_ property: MonitorContract.Property) -> String { values[property]?.stringValue ?? "" }
    private func number(_ property: MonitorContract.Property) -> UInt64 {
        switch values[property] {
        case .uint32(let value): UInt64(value)
        case .uint64(let value): value
        default: 0
        }
    }

    public var Status: String { string(.status) }
    public var Reachable: Bool { values[.reachable]?.boolValue ?? false }
    public var Host: String { string(.host) }
    public var Address: String { string(.address) }
    public var Interface: String { string(.interface) }
    public var Reason: String { string(.reason) }
    public var RoundTripTime: UInt64 { number(.roundTripTime) }
    public var PacketLoss: Double { values[.packetLoss]?.doubleValue ?? 0 }
    public var LastChange: UInt64 { number(.lastChange) }
    public var Interval: UInt64 { number(.interval) }
    public var Timeout: UInt64 { number(.timeout) }
    public var FailureThreshold: UInt64 { number(.failureThreshold) }
    public var RecoveryThreshold: UInt64 { number(.recoveryThreshold) }
    public var AddressFamily: String { string(.addressFamily) }
    public var ProbesSent: UInt64 { number(.probesSent) }
    public var ProbesAnswered: UInt64 { number(.probesAnswered) }
    public var AccessTechnology: String { string(.accessTechnology) }
    public var Metered: Bool { values[.metered]?.boolValue ?? false }
    public var Connectivity: String { string(.connectivity) }
    public var ProbeMethod: String { string(.probeMethod) }
    public var CheckURL: String { string(.checkURL) }
    public var PortalURL: String { string(.portalURL) }
    public var Traffic: String { string(.traffic) }
    public var Evidence: String { string(.evidence) }
    public var Probing: String { string(.probing) }
    public var IdleInterval: UInt64 { number(.idleInterval) }
    public var ProbesSkipped: UInt64 { number(.probesSkipped) }
    public var Connectivity4: String { string(.connectivity4) }
    public var Connectivity6: String { string(.connectivity6) }
    public var Address4: String { string(.address4) }
    public var Address6: String { string(.address6) }
    public var Reason4: String { string(.reason4) }
    public var Reason6: String { string(.reason6) }
    public var RoundTripTime4: UInt64 { number(.roundTripTime4) }
    public var RoundTripTime6: UInt64 { number(.roundTripTime6) }
    public var Nat64Prefix: String { string(.nat64Prefix) }
    public var Nat64Source: String { string(.nat64Source) }
    public var Ipv4Path: String { string(.ipv4Path) }
    public var PortalAPI: String { string(.portalAPI) }
    public var PortalVenueURL: String { string(.portalVenueURL) }
    public var PortalSecondsRemaining: UInt64 { number(.portalSecondsRemaining) }
    public var SecureCheckURL: String { string(.secureCheckURL) }
    public var CheckEcho: Bool { values[.checkEcho]?.boolValue ?? false }
    public var Partial: Bool { values[.partial]?.boolValue ?? false }
    public var Gateway4: String { string(.gateway4) }
    public var Gateway6: String { string(.gateway6) }
    public var Blame: String { string(.blame) }
    public var Neighbor4: String { string(.neighbor4) }
    public var Neighbor6: String { string(.neighbor6) }
    public var Dns: String { string(.dns) }
    public var DnsServer: String { string(.dnsServer) }
    public var DnsTransport: String { string(.dnsTransport) }
    public var DnsRoundTripTime: UInt64 { number(.dnsRoundTripTime) }
    public var DnsProbeZone: String { string(.dnsProbeZone) }
    /// Seconds in each Connectivity value and asleep, as the service counts them.
    public var TimeInState: [String: UInt64] {
        guard case .dictionary(_, _, let entries)? = values[.timeInState] else { return [:] }
        var times: [String: UInt64] = [:]
        for entry in entries {
            guard let key = entry.key.stringValue, case .uint64(let seconds) = entry.value else { continue }
            times[Self.withoutControlCharacters(key)] = seconds
        }
        return times
    }

    /// One family's line: `full via eth0, 198.18.2.2, 1.2 ms`, or `limited: host not answering over IPv6: …`.
    public func familyLine(ipv6: Bool) -> String {
        let (connectivity, address, reason, rtt) =
            ipv6
            ? (Connectivity6, Address6, Reason6, RoundTripTime6)
            : (Connectivity4, Address4, Reason4, RoundTripTime4)
        var text = connectivity.isEmpty ? "unknown" : connectivity
        if !reason.isEmpty { return text + ": " + reason }
        // The headline's family is the one whose route Interface names.
        if !address.isEmpty, address == Address, !Interface.isEmpty { text += " via \(Interface)" }
        let details = [address, rtt > 0 && connectivity == "full" ? Self.milliseconds(rtt) : ""].filter { !$0.isEmpty }
        return details.isEmpty ? text : text + (text.contains(" via ") ? ", " : " ") + details.joined(separator: ", ")
    }

    /// DNS truth in words: `ok via 192.0.2.53 (udp), 12.0 ms`, `failing: new lookups of …`,
    /// `unencrypted: resolved is set to DNS-over-TLS but answered in plain text`.
    public var dnsLine: String {
        switch Dns {
        case "failing":
            let prefix = "DNS fails: "
            return "failing: "
                + (Reason.hasPrefix(prefix) ? String(Reason.dropFirst(prefix.count)) : "fresh lookups fail")
        case "intercepted":
            return "intercepted: a name that cannot exist got an address (NXDOMAIN rewritten, or a portal)"
        case "unencrypted": return "unencrypted: resolved is set to DNS-over-TLS but answered in plain text"
        case "ok", "slow":
            var text = Dns
            if !DnsServer.isEmpty { text += " via \(DnsServer)" + (DnsTransport.isEmpty ? "" : " (\(DnsTransport))") }
            if DnsRoundTripTime > 0 { text += ", " + Self.milliseconds(DnsRoundTripTime) }
            return text
        default: return Dns.isEmpty ? "unknown" : Dns
        }
    }

    /// Status with what the link is: `cellular (4g, metered)`.
    public var statusWithLink: String {
        let details = [AccessTechnology, Metered ? "metered" : ""].filter { !$0.isEmpty }
        return details.isEmpty ? Status : "\(Status) (\(details.joined(separator: ", ")))"
    }

    private struct Key: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// Every property under its D-Bus name, with the type's zero when the service did not say.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for property in MonitorContract.Property.allCases {
            let key = Key(stringValue: property.name)
            switch property.type {
            case .boolean: try container.encode(values[property]?.boolValue ?? false, forKey: key)
            case .uint32, .uint64: try container.encode(number(property), forKey: key)
            case .dictionary: try container.encode(TimeInState, forKey: key)
            case .double: try container.encode(values[property]?.doubleValue ?? 0, forKey: key)
            default: try container.encode(string(property), forKey: key)
            }
        }
    }

    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The status screen.
    public func screen() -> String {
        let dash = "—"
        var lines = [
            "Status:       \(statusWithLink)" + (Reachable ? " (reachable)" : ""),
            "Connectivity: \(Connectivity)" + (ProbeMethod.isEmpty ? "" : ", heard by \(ProbeMethod)"),
            "Host:         \(Host)" + (AddressFamily == "any" ? "" : " (\(AddressFamily))"),
            "Address:      \(Address.isEmpty ? dash : Address)",
            "Interface:    \(Interface.isEmpty ? dash : Interface)",
            "Round trip:   \(RoundTripTime == 0 ? dash : Self.milliseconds(RoundTripTime))",
            "Packet loss:  \(Int((PacketLoss * 100).rounded())) % of the last 20 probes",
            "IPv4:         \(familyLine(ipv6: false))",
            "IPv6:         \(familyLine(ipv6: true))",
        ]
        let gateways = [(Gateway4, "IPv4", Neighbor4), (Gateway6, "IPv6", Neighbor6)].filter { !$0.0.isEmpty }.map {
            "\($0.0) (\($0.1)" + ($0.2.isEmpty ? "" : ", \($0.2)") + ")"
        }
        if !gateways.isEmpty { lines.append("Gateway:      " + gateways.joined(separator: ", ")) }
        if !Blame.isEmpty { lines.append("Blame:        \(Blame)") }
        if !Dns.isEmpty {
            lines.append("DNS:          \(dnsLine)" + (DnsProbeZone.isEmpty ? "" : " (probe zone \(DnsProbeZone))"))
        }
        if !Nat64Prefix.isEmpty {
            lines.append(
                "NAT64:        \(Nat64Prefix)"
                    + (Nat64Source.isEmpty ? "" : " (from \(Nat64Source == "ra" ? "the router" : "DNS"))")
                    + (Ipv4Path == "nat64" ? ", IPv4 reached through it" : ""))
        }
        if !PortalURL.isEmpty { lines.append("Sign in at:   \(PortalURL)") }
        if !PortalAPI.isEmpty {
            lines.append(
                "Portal API:   \(PortalAPI)"
                    + (PortalSecondsRemaining > 0 ? " (\(PortalSecondsRemaining) s remaining)" : ""))
        }
        if !PortalVenueURL.isEmpty { lines.append("Venue:        \(PortalVenueURL)") }
        if Partial { lines.append("Partial:      yes: plain HTTP passes, HTTPS fails") }
        if !Reason.isEmpty { lines.append("Reason:       \(Reason)") }
        lines.append("Since:        \(Self.timestamp(LastChange))")
        lines.append(
            "Traffic:      \(Traffic.isEmpty ? dash : Traffic)"
                + (Evidence == "traffic" ? " (stands in for probes while flowing: \(ProbesSkipped) skipped)" : ""))
        lines.append("Check URL:    \(CheckURL.isEmpty ? "off" : CheckURL)" + (CheckEcho ? " (with the echo)" : ""))
        if !SecureCheckURL.isEmpty { lines.append("Secure check: \(SecureCheckURL)") }
        let calm: String = Probing == "adaptive" ? " while unsure; calm: every \(max(IdleInterval, Interval)) ms" : ""
        lines.append(
            "Probing:      every \(Interval) ms, timeout \(Timeout) ms, down after \(FailureThreshold), up after \(RecoveryThreshold)"
                + calm)
        return lines.joined(separator: "\n")
    }

    /// One line for `monitor`.
    public func line() -> String {
        var text = "\(Self.timestamp(LastChange)) \(statusWithLink) \(Host)"
        if !Address.isEmpty && Address != Host { text += " (\(Address))" }
        if !Interface.isEmpty { text += " via \(Interface)" }
        if RoundTripTime > 0 && Reachable { text += " rtt \(Self.milliseconds(RoundTripTime))" }
        if !Reason.isEmpty { text += ": \(Reason)" }
        return text
    }

    public static func milliseconds(_ microseconds: UInt64) -> String {
        // Rounded to the tenth without adding first: the value is the service's word, up to UInt64.max.
        let tenths = microseconds / 100 + (microseconds % 100 >= 50 ? 1 : 0)
        return "\(tenths / 10).\(tenths % 10) ms"
    }

    /// CLOCK_REALTIME microseconds as an ISO 8601 UTC time.
    public static func timestamp(_ microseconds: UInt64) -> String {
        guard microseconds > 0 else { return "—" }
        return formatted(microseconds, "%Y-%m-%dT%H:%M:%SZ", local: false)
    }

    /// CLOCK_REALTIME microseconds in strftime's `format`, as UTC or local time.
    static func formatted(_ microseconds: UInt64, _ format: String, local: Bool) -> String {
        var seconds = time_t(microseconds / 1_000_000)
        var parts = tm()
        if local { localtime_r(&seconds, &parts) } else { gmtime_r(&seconds, &parts) }
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, format, &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
