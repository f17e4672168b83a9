import DBusKit
import MonitorRules
import ProbeRules

/// org.netobserver.Monitor as INTERFACE.md defines it, typed once: the names, every
/// property's type, access and change mode, the methods and the signal. The daemon's
/// declaration, the client and the tests all read it from here.
public enum MonitorContract {
    public static let busName = "org.netobserver.Monitor"
    public static let objectPath = "/org/netobserver/Monitor"
    public static let interface = "org.netobserver.Monitor"
    public static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// The properties, in the order INTERFACE.md (and introspection) lists them.
    public enum Property: String, CaseIterable, Sendable {
        case status = "Status"
        case host = "Host"
        case reachable = "Reachable"
        case interface = "Interface"
        case address = "Address"
        case reason = "Reason"
        case roundTripTime = "RoundTripTime"
        case packetLoss = "PacketLoss"
        case lastChange = "LastChange"
        case interval = "Interval"
        case timeout = "Timeout"
        case failureThreshold = "FailureThreshold"
        case recoveryThreshold = "RecoveryThreshold"
        case addressFamily = "AddressFamily"
        case probesSent = "ProbesSent"
        case probesAnswered = "ProbesAnswered"
        case accessTechnology = "AccessTechnology"
        case metered = "Metered"
        case connectivity = "Connectivity"
        case probeMethod = "ProbeMethod"
        case checkURL = "CheckURL"
        case portalURL = "PortalURL"
        case traffic = "Traffic"
        case evidence = "Evidence"
        case probesSkipped = "ProbesSkipped"
        case connectivity4 = "Connectivity4"
        case connectivity6 = "Connectivity6"
        case address4 = "Address4"
        case address6 = "Address6"
        case reason4 = "Reason4"
        case reason6 = "Reason6"
        case roundTripTime4 = "RoundTripTime4"
        case roundTripTime6 = "RoundTripTime6"
        case nat64Prefix = "Nat64Prefix"
        case nat64Source = "Nat64Source"
        case ipv4Path = "Ipv4Path"
        case portalAPI = "PortalAPI"
        case portalVenueURL = "PortalVenueURL"
        case portalSecondsRemaining = "PortalSecondsRemaining"
        case secureCheckURL = "SecureCheckURL"
        case checkEcho = "CheckEcho"
        case partial = "Partial"
        case gateway4 = "Gateway4"
        case gateway6 = "Gateway6"
        case blame = "Blame"
        case neighbor4 = "Neighbor4"
        case neighbor6 = "Neighbor6"
        case timeInState = "TimeInState"
        case dns = "Dns"
        case dnsServer = "DnsServer"
        case dnsTransport = "DnsTransport"
        case dnsRoundTripTime = "DnsRoundTripTime"
        case dnsProbeZone = "DnsProbeZone"
        case probing = "Probing"
        case idleInterval = "IdleInterval"

        public var name: String { rawValue }

        public var type: DBusType {
            switch self {
            case .status, .host, .interface, .address, .reason, .addressFamily, .accessTechnology,
                .connectivity, .probeMethod, .checkURL, .portalURL, .traffic, .evidence,
                .connectivity4, .connectivity6, .address4, .address6, .reason4, .reason6, .nat64Prefix, .nat64Source,
                .ipv4Path, .portalAPI, .portalVenueURL, .secureCheckURL, .gateway4, .gateway6, .blame, .neighbor4,
                .neighbor6, .dns, .dnsServer, .dnsTransport, .dnsProbeZone, .probing:
                .string
            case .timeInState: .dictionary(key: .string, value: .uint64)
            case .reachable, .metered, .checkEcho, .partial: .boolean
            case .roundTripTime, .lastChange, .probesSent, .probesAnswered, .probesSkipped, .roundTripTime4,
                .roundTripTime6,
                .portalSecondsRemaining, .dnsRoundTripTime:
                .uint64
            case .packetLoss: .double
            case .interval, .timeout, .failureThreshold, .recoveryThreshold, .idleInterval: .uint32
            }
        }

        public var access: PropertyAccess { isSetting ? .readwrite : .read }

        /// RoundTripTime, PacketLoss and the probe counters change with every probe, Traffic with
        /// every burst of traffic: they ride along with loud changes only.
        public var changeMode: PropertyChangeMode {
            switch self {
            case .roundTripTime, .packetLoss, .probesSent, .probesAnswered, .traffic, .probesSkipped, .roundTripTime4,
                .roundTripTime6,
                .portalSecondsRemaining, .timeInState, .dnsRoundTripTime:
                .quiet
            default: .emits
            }
        }

        public var isSetting: Bool { settingName != nil }

        /// The word `netobserver set` and the command lines use for a writable property.
        public var settingName: String? {
            switch self {
            case .host: "host"
            case .interval: "interval"
            case .timeout: "timeout"
            case .failureThreshold: "failures"
            case .recoveryThreshold: "recoveries"
            case .addressFamily: "family"
            case .checkURL: "check-url"
            case .evidence: "evidence"
            case .secureCheckURL: "secure-check-url"
            case .checkEcho: "check-echo"
            case .dnsProbeZone: "dns-probe-zone"
            case .probing: "probing"
            case .idleInterval: "idle-interval"
            default: nil
            }
        }

        public init?(settingName: String) {
            guard let found = Self.allCases.first(where: { $0.settingName == settingName }) else { return nil }
            self = found
        }

        public static var settings: [Property] { allCases.filter(\.isSetting) }
    }

    public enum Method: String, CaseIterable, Sendable {
        case check = "Check"
        case wait = "Wait"
        case getHistory = "GetHistory"

        public var name: String { rawValue }
        public var inputs: [DBusArgument] {
            switch self {
            case .check: []
            case .wait: [DBusArgument("timeout_ms", .uint32)]
            case .getHistory: [DBusArgument("max", .uint32)]
            }
        }
        public var outputs: [DBusArgument] {
            switch self {
            case .check: [DBusArgument("status", .string)]
            case .wait: [DBusArgument("reachable", .boolean)]
            case .getHistory: [DBusArgument("outages", MonitorContract.outageList)]
            }
        }
    }

    public enum Signal: String, CaseIterable, Sendable {
        case statusChanged = "StatusChanged"
        case outageEnded = "OutageEnded"

        public var name: String { rawValue }
        public var arguments: [DBusArgument] {
            switch self {
            case .statusChanged: [DBusArgument("status", .string), DBusArgument("host", .string)]
            case .outageEnded:
                [DBusArgument("start", .uint64), DBusArgument("duration", .uint64), DBusArgument("blame", .string)]
            }
        }
    }

    /// GetHistory's reply: start (CLOCK_REALTIME µs), duration (µs), Blame, the worst Connectivity, Reason; newest first.
    public static let outageList = DBusType.array(.structure([.uint64, .uint64, .string, .string, .string]))
    /// GetHistory returns at most this many outages (the service keeps no more), and fewer when its reply would pass `historyReplyBytes`.
    public static let historyLimit: UInt32 = 1_000
    public static let historyReplyBytes = 64 * 1024

    /// Status's and Connectivity's values (MonitorRules decides them).
    public typealias Status = MonitorRules.Status
    public typealias Connectivity = MonitorRules.Connectivity

    /// org.netobserver.Targets, on the default target's object: more targets, each a full
    /// org.netobserver.Monitor at `objectPath/N`.
    public enum Targets {
        public static let interface = "org.netobserver.Targets"
        public static let addTarget = "AddTarget"
        public static let removeTarget = "RemoveTarget"
        /// The added targets' paths, in the order they were added.
        public static let targetsProperty = "Targets"
        /// At most this many added targets.
        public static let limit = 64
        /// The numbers N a target may have. Never reused, so once the last is given out
        /// AddTarget is refused rather than wrapping around (at 16 additions per 10 s,
        /// after some 19 years of adding without a pause).
        public static let numbers: ClosedRange<UInt32> = 1...1_000_000_000

        public static func path(_ number: UInt32) -> String { objectPath + "/\(number)" }

        /// N of `objectPath/N`; nil for any other path.
        public static func number(of path: String) -> UInt32? {
            let prefix = objectPath + "/"
            guard path.hasPrefix(prefix), let number = UInt32(path.dropFirst(prefix.count)), numbers.contains(number),
                path == Self.path(number)
            else { return nil }
            return number
        }
    }

    /// Wait's timeout_ms bounds.
    public static let waitTimeoutRange: ClosedRange<UInt32> = 0...3_600_000
}

extension MonitorContract.Property: CustomStringConvertible {
    public var description: String { name }
}
