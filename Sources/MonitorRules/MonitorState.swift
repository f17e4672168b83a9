import NetAddress
import ProbeRules

/// Status's values: `unknown` (no verdict yet), `none`, or the kind of the route's interface.
public enum Status: String, CaseIterable, Sendable {
    case unknown, none, ethernet, wifi, cellular, vpn, other

    /// True for the kinds that mean "connected".
    public var isConnected: Bool {
        switch self {
        case .unknown, .none: false
        default: true
        }
    }
}

/// What the network gives (INTERFACE.md, "Connectivity"); Status is connected only when `full`.
public enum Connectivity: String, CaseIterable, Sendable {
    case unknown, none, portal, limited, full
}

/// Which address family the probe uses.
public enum AddressFamily: String, CaseIterable, Sendable {
    case any, ipv4, ipv6

    /// Whether `address` is of a family this setting allows.
    public func admits(_ address: IPAddress) -> Bool {
        switch self {
        case .any: true
        case .ipv4: address.ipFamily == .v4
        case .ipv6: address.ipFamily == .v6
        }
    }
}

/// The read-only properties of org.netobserver.Monitor, as one value.
public struct MonitorState: Equatable, Sendable {
    public var status: Status = .unknown
    public var interface = ""
    public var address = ""
    /// Why Status is not connected, one line (Reason).
    public var reason: String {
        get { silence.map { "host not answering: " + $0 } ?? reasonText }
        set {
            reasonText = newValue
            silence = nil
        }
    }
    /// When the probes' silence is the reason: what follows "host not answering" ("2 probes lost"),
    /// which a family's line says over its family. Any other reason set clears it.
    public private(set) var silence: String?
    private var reasonText = ""
    public var roundTripTime: UInt64 = 0
    public var packetLoss: Double = 0
    public var lastChange: UInt64 = 0
    /// Probes sent and answered since the daemon started; they only grow.
    public var probesSent: UInt64 = 0
    public var probesAnswered: UInt64 = 0
    /// The route's modem generation ("2g" … "5g"), "" when unknown or not a modem.
    public var accessTechnology = ""
    /// The route's link costs money by the byte.
    public var metered = false
    public var connectivity: Connectivity = .unknown
    /// How the host was last heard from: "icmp", "tcp", or "" before its first answer.
    public var probeMethod = ""
    /// Where a captive portal wants the user to sign in; "" unless Connectivity is `portal`.
    public var portalURL = ""
    /// The next hop of the route to Host ("" when on-link or no usable route).
    public var gateway = ""
    /// The next hop's answer to the neighbour check; nil when none applies.
    public var neighbor: NeighborAnswer?
    /// Where the path to Host breaks; nil while full or unknown, or not found yet.
    public var blame: Blame?
    /// The captive-portal API the route's network announced (RFC 8910), "" when none; its `venue-info-url`
    /// and `seconds-remaining` at the last answer (0 when not given).
    public var portalAPI = ""
    public var portalVenueURL = ""
    public var portalSecondsRemaining: UInt64 = 0
    /// The plain check gets the expected answer while the secure one fails.
    public var partial = false
    /// What the machine's own TCP traffic says about the route to Host.
    public var traffic: Traffic = .none
    /// Scheduled probes skipped because traffic flowed, since the daemon started; only grows.
    public var probesSkipped: UInt64 = 0

    /// Each family's own verdict (Connectivity4/6, Address4/6, Reason4/6, RoundTripTime4/6).
    public var ipv4 = FamilyState()
    public var ipv6 = FamilyState()
    /// The NAT64 prefix of the network the route to Host uses ("" when none), how it was learned
    /// (nil when none), and how Host's IPv4 address is reached (nil when it is not).
    public var nat64Prefix = ""
    public var nat64Source: Nat64Source?
    public var ipv4Path: IPv4Path?
    /// DNS truth (Dns, DnsServer, DnsTransport, DnsRoundTripTime).
    public var dns = DnsView()

    public init() {}

    public var reachable: Bool { status.isConnected }

    /// The reason is the probes' silence, in these words.
    public mutating func setSilence(_ detail: String) {
        reasonText = ""
        silence = detail
    }
}

/// How Host's IPv4 address is reached (INTERFACE.md `Ipv4Path`).
public enum IPv4Path: String, Sendable {
    /// Over an IPv4 route.
    case native
    /// Through the network's NAT64 prefix.
    case nat64
}

/// One address family's verdict for a target (INTERFACE.md "Every path").
public struct FamilyState: Equatable, Sendable {
    public var connectivity: Connectivity
    /// The address probed in this family, numeric; "" when none.
    public var address: String
    /// Why this family is not `full`; "" when it is, or has no verdict yet.
    public var reason: String
    /// The last successful round trip in this family, microseconds; 0 when none.
    public var roundTripTime: UInt64
    /// The next hop of this family's route to Host; "" when on-link or no route.
    public var gateway: String
    /// The next hop's answer to the neighbour check (`Neighbor4`, `Neighbor6`); nil when none applies.
    public var neighbor: NeighborAnswer?

    public init(
        connectivity: Connectivity = .unknown, address: String = "", reason: String = "", roundTripTime: UInt64 = 0,
        gateway: String = "", neighbor: NeighborAnswer? = nil
    ) {
        self.connectivity = connectivity
        self.address = address
        self.reason = reason
        self.roundTripTime = roundTripTime
        self.gateway = gateway
        self.neighbor = neighbor
    }
}
