import DaemonWorlds
import MonitorContract
import MonitorRules
import NetAddress
import NetCore
import Probe
import ProbeRules

/// A rejected setting: which one, and a message naming it and the accepted values.
public struct SettingError: Error, Equatable, Sendable {
    public let message: String
}

/// The writable properties of org.netobserver.Monitor, with their ranges.
public struct MonitorSettings: Equatable, Sendable {
    public var host = "one.one.one.one"
    public var interval: UInt32 = 1000
    public var timeout: UInt32 = 1000
    public var failureThreshold: UInt32 = 2
    public var recoveryThreshold: UInt32 = 1
    public var family: AddressFamily = .any
    /// "" turns the HTTP check off.
    public var checkURL = ""
    /// CheckURL came from the command line, which may point it at any address; one Set over
    /// D-Bus (or restored from what was) may not lead into this machine or its link.
    public var checkURLMayPointInward = false
    /// Whether flowing traffic may stand in for scheduled probes.
    public var evidence: Evidence = .probes
    /// "" turns the secure check off.
    public var secureCheckURL = ""
    /// As `checkURLMayPointInward`, for SecureCheckURL.
    public var secureCheckURLMayPointInward = false
    /// Every check carries a nonce only the real server echoes.
    public var checkEcho = false
    /// "" (off), or a zone of the user's own under which DNS truth asks a random label with each fresh lookup.
    public var dnsProbeZone = ""
    /// INTERFACE.md "Quiet by default". `steady` until the project's own tests that count in Intervals are pinned to it
    /// (issue 56): then `adaptive`, as the section says.
    public var probing: Probing = .steady
    /// The calm period's base, in milliseconds (4 × while metered; never shorter than the Interval).
    public var idleInterval: UInt32 = 60_000
    /// The longest DnsProbeZone that can be asked: a random 16-hex-digit label and its dot go before it, and a name
    /// has at most 253 bytes (issue 54 N32: a longer zone was taken and never asked, a false `limited`).
    public static let longestProbeZone = 253 - 17

    public init() {}

    public static let intervalRange: ClosedRange<UInt32> = 100...3_600_000
    public static let timeoutRange: ClosedRange<UInt32> = 10...60_000
    public static let thresholdRange: ClosedRange<UInt32> = 1...100
    public static let idleIntervalRange: ClosedRange<UInt32> = 1000...3_600_000

    /// One writable setting: its D-Bus property (name, type), command-line flag and range.
    public enum Key: CaseIterable, Sendable {
        case host, interval, timeout, failureThreshold, recoveryThreshold, family, checkURL, evidence, secureCheckURL,
            checkEcho, dnsProbeZone, probing, idleInterval

        public var property: MonitorContract.Property {
            switch self {
            case .host: .host
            case .interval: .interval
            case .timeout: .timeout
            case .failureThreshold: .failureThreshold
            case .recoveryThreshold: .recoveryThreshold
            case .family: .addressFamily
            case .checkURL: .checkURL
            case .evidence: .evidence
            case .secureCheckURL: .secureCheckURL
            case .checkEcho: .checkEcho
            case .dnsProbeZone: .dnsProbeZone
            case .probing: .probing
            case .idleInterval: .idleInterval
            }
        }

        /// The D-Bus property name, which is also the state file's key.
        public var name: String { property.name }

        public init?(name: String) {
            guard let key = Self.allCases.first(where: { $0.name == name }) else { return nil }
            self = key
        }

        public var flag: String { "--" + (property.settingName ?? name) }

        public var accepted: String {
            switch self {
            case .host: "a host name (RFC 1123, at most 253 bytes), an IPv4 dotted quad or an IPv6 literal"
            case .interval: "\(MonitorSettings.intervalRange.lowerBound)–\(MonitorSettings.intervalRange.upperBound) ms"
            case .timeout: "\(MonitorSettings.timeoutRange.lowerBound)–\(MonitorSettings.timeoutRange.upperBound) ms"
            case .failureThreshold, .recoveryThreshold:
                "\(MonitorSettings.thresholdRange.lowerBound)–\(MonitorSettings.thresholdRange.upperBound)"
            case .family: AddressFamily.allCases.map(\.rawValue).joined(separator: ", ")
            case .evidence: Evidence.allCases.map(\.rawValue).joined(separator: ", ")
            case .probing: Probing.allCases.map(\.rawValue).joined(separator: ", ")
            case .idleInterval:
                "\(MonitorSettings.idleIntervalRange.lowerBound)–\(MonitorSettings.idleIntervalRange.upperBound) ms"
            case .checkURL:
                "\"\" (off) or an http:// URL of at most \(CheckURL.longest) bytes: a host name, IPv4 or [IPv6] literal, optional port and path"
            case .secureCheckURL:
                "\"\" (off) or an https:// URL of at most \(CheckURL.longest) bytes: a host name, IPv4 or [IPv6] literal, optional port and path"
            case .checkEcho: "true, false"
            case .dnsProbeZone:
                "\"\" (off) or a DNS zone (RFC 1123 labels, at most \(MonitorSettings.longestProbeZone) bytes so that the "
                    + "probe's 16-hex-digit label fits in a 253-byte name, one trailing dot allowed, not an IP literal)"
            }
        }

        public var range: ClosedRange<UInt32>? {
            switch self {
            case .interval: MonitorSettings.intervalRange
            case .timeout: MonitorSettings.timeoutRange
            case .failureThreshold, .recoveryThreshold: MonitorSettings.thresholdRange
            case .idleInterval: MonitorSettings.idleIntervalRange
            case .host, .family, .checkURL, .evidence, .secureCheckURL, .checkEcho, .dnsProbeZone, .probing: nil
            }
        }
    }

    /// Sets `key` from its text form (command line, state file, D-Bus); `name` says
    /// how the caller refers to it in the error. `fromAdministrator`: the command line,
    /// whose CheckURL may point anywhere.
    /// `isThisMachine`: whether an address is one of this machine's (a CheckURL Set over D-Bus may not name one).
    public mutating func set(
        _ key: Key, text: String, name: String? = nil, fromAdministrator: Bool = false,
        isThisMachine: (IPAddress) -> Bool = { _ in false }
    ) throws(SettingError) {
        let label = name ?? key.name
        if key.range != nil {
            guard let value = UInt32(text) else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not a number (accepted: \(key.accepted))")
            }
            try set(key, number: value, name: label)
            return
        }
        switch key {
        case .host:
            guard HostName.isValid(text) else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not valid (accepted: \(key.accepted))")
            }
            host = text
        case .family:
            guard let family = AddressFamily(rawValue: text) else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not valid (accepted: \(key.accepted))")
            }
            self.family = family
        case .evidence:
            guard let evidence = Evidence(rawValue: text) else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not valid (accepted: \(key.accepted))")
            }
            self.evidence = evidence
        case .probing:
            guard let probing = Probing(rawValue: text) else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not valid (accepted: \(key.accepted))")
            }
            self.probing = probing
        case .checkURL, .secureCheckURL:
            let secure = key == .secureCheckURL
            guard CheckURL.isValid(text, secure: secure) else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not valid (accepted: \(key.accepted))")
            }
            if !fromAdministrator, let target = CheckURLTarget(text),
                target.isInwardLiteral || target.literal.map(isThisMachine) == true
            {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' points into this machine or its link "
                        + "(loopback, link-local, unspecified, multicast and this machine's own addresses are refused)")
            }
            if secure {
                secureCheckURL = text
                secureCheckURLMayPointInward = fromAdministrator
            } else {
                checkURL = text
                checkURLMayPointInward = fromAdministrator
            }
        case .checkEcho:
            guard let flag = ["true": true, "false": false][text] else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not valid (accepted: \(key.accepted))")
            }
            checkEcho = flag
        case .dnsProbeZone:
            let zone = text.hasSuffix(".") ? text.dropLast() : text[...]
            guard text.isEmpty || (zone.utf8.count <= Self.longestProbeZone && HostName.isDNSName(text)) else {
                throw SettingError(
                    message: "\(label): '\(Self.printable(text))' is not valid (accepted: \(key.accepted))")
            }
            dnsProbeZone = text
        default:
            break
        }
    }

    /// Sets a numeric `key`, checking its range.
    public mutating func set(_ key: Key, number: UInt32, name: String? = nil) throws(SettingError) {
        let label = name ?? key.name
        guard let range = key.range else {
            throw SettingError(message: "\(label) is not a number")
        }
        guard range.contains(number) else {
            throw SettingError(message: "\(label): \(number) is out of range (accepted: \(key.accepted))")
        }
        switch key {
        case .interval: interval = number
        case .timeout: timeout = number
        case .failureThreshold: failureThreshold = number
        case .recoveryThreshold: recoveryThreshold = number
        case .idleInterval: idleInterval = number
        case .host, .family, .checkURL, .evidence, .secureCheckURL, .checkEcho, .dnsProbeZone, .probing: break
        }
    }

    /// The text form of `key`'s value, as the state file stores it.
    public func text(_ key: Key) -> String {
        switch key {
        case .host: host
        case .interval: String(interval)
        case .timeout: String(timeout)
        case .failureThreshold: String(failureThreshold)
        case .recoveryThreshold: String(recoveryThreshold)
        case .family: family.rawValue
        case .checkURL: checkURL
        case .evidence: evidence.rawValue
        case .secureCheckURL: secureCheckURL
        case .checkEcho: checkEcho ? "true" : "false"
        case .dnsProbeZone: dnsProbeZone
        case .probing: probing.rawValue
        case .idleInterval: String(idleInterval)
        }
    }

    /// A value shown back in an error message, with control characters escaped and length bounded.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(80) {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\x" + String(scalar.value, radix: 16)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return text.unicodeScalars.count > 80 ? out + "…" : out
    }
}

extension MonitorSettings {
    /// Stored values (the state file's) over these settings, the one way every target takes
    /// them: each valid value is kept, and taken unless its key is in `except` (a command-line
    /// flag wins); each invalid one is a problem, in words, and changes nothing.
    public func applying(
        _ stored: [Key: String], except: Set<Key> = []
    )
        -> (settings: MonitorSettings, kept: [Key: String], problems: [String])
    {
        var settings = self
        var kept: [Key: String] = [:]
        var problems: [String] = []
        for key in Key.allCases {
            guard let text = stored[key] else { continue }
            var candidate = settings
            do throws(SettingError) {
                try candidate.set(key, text: text)
            } catch {
                problems.append(error.message)
                continue
            }
            kept[key] = text
            if !except.contains(key) { settings = candidate }
        }
        return (settings, kept, problems)
    }

    /// Whether `key`'s URL came from the command line and may point anywhere (false for every other key).
    public func mayPointInward(_ key: Key) -> Bool {
        switch key {
        case .checkURL: checkURLMayPointInward
        case .secureCheckURL: secureCheckURLMayPointInward
        default: false
        }
    }

    /// The keys whose values (or whose URLs' permission to point inward) differ from `other`'s.
    public func changedKeys(from other: MonitorSettings) -> [Key] {
        Key.allCases.filter { text($0) != other.text($0) || mayPointInward($0) != other.mayPointInward($0) }
    }
}

extension MonitorSettings {
    /// What a target's world is configured with.
    public var configuration: TargetConfiguration {
        TargetConfiguration(
            host: host, family: family,
            probe: ProbeSettings(
                intervalMilliseconds: interval, timeoutMilliseconds: timeout, failureThreshold: failureThreshold,
                recoveryThreshold: recoveryThreshold, evidence: evidence, probing: probing,
                idleIntervalMilliseconds: idleInterval),
            check: CheckConfiguration(
                url: checkURL, secureURL: secureCheckURL, echo: checkEcho,
                plainMayPointInward: checkURLMayPointInward, secureMayPointInward: secureCheckURLMayPointInward),
            dnsProbeZone: dnsProbeZone)
    }
}

extension MonitorSettings.Key {
    /// What of a target's configuration a change of this setting touches.
    public var part: TargetConfiguration.Part {
        switch self {
        case .host, .family: .target
        case .interval, .failureThreshold, .recoveryThreshold, .evidence, .probing, .idleInterval:
            .probe(timeoutChanged: false)
        case .timeout: .probe(timeoutChanged: true)
        case .dnsProbeZone: .dnsProbeZone
        case .checkURL, .secureCheckURL, .checkEcho: .check
        }
    }
}
