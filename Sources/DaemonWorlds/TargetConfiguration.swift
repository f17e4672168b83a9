import MonitorRules
import NetAddress
import ProbeRules

/// What one target is asked to watch and how, in the worlds' own terms: the service's settings
/// (and their D-Bus names) stay with the service, which hands each target this.
public struct TargetConfiguration: Equatable, Sendable {
    public var host: String
    public var family: AddressFamily
    public var probe: ProbeSettings
    public var check: CheckConfiguration
    /// "" (off), or the zone under which DNS truth asks a random label.
    public var dnsProbeZone: String

    public init(
        host: String, family: AddressFamily, probe: ProbeSettings, check: CheckConfiguration = CheckConfiguration(),
        dnsProbeZone: String = ""
    ) {
        self.host = host
        self.family = family
        self.probe = probe
        self.check = check
        self.dnsProbeZone = dnsProbeZone
    }

    /// What one change of a setting touches.
    public enum Part: Equatable, Sendable {
        /// Host or AddressFamily: a new target.
        case target
        /// How it is probed; whether Timeout (which bounds DNS truth's questions too) is what changed.
        case probe(timeoutChanged: Bool)
        case dnsProbeZone
        /// CheckURL, SecureCheckURL or CheckEcho.
        case check
    }
}

/// What one check of the network is made of (CheckURL, SecureCheckURL, CheckEcho).
public struct CheckConfiguration: Equatable, Sendable {
    /// "" turns each check off.
    public var url: String
    public var secureURL: String
    /// Every check carries a nonce only the real server echoes.
    public var echo: Bool
    /// Each URL may lead into this machine only when the administrator chose it (the command line).
    public var plainMayPointInward: Bool
    public var secureMayPointInward: Bool

    public init(
        url: String = "", secureURL: String = "", echo: Bool = false, plainMayPointInward: Bool = false,
        secureMayPointInward: Bool = false
    ) {
        self.url = url
        self.secureURL = secureURL
        self.echo = echo
        self.plainMayPointInward = plainMayPointInward
        self.secureMayPointInward = secureMayPointInward
    }

    /// The URL that stands for the check in the core (and in Reason while it runs): CheckURL, else
    /// SecureCheckURL; "" when both are off. What else the check is made of, the driver reads when it runs.
    public var shown: String { url.isEmpty ? secureURL : url }
}
