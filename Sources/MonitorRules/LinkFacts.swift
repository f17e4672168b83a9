/// What ModemManager and NetworkManager say about one network interface.
public struct LinkFacts: Equatable, Sendable {
    /// A ModemManager modem lists the interface as its net port.
    public var isModem = false
    /// That modem's generation, when it says.
    public var generation: CellularGeneration?
    /// NetworkManager's device for the interface is metered (yes or guess-yes).
    public var meteredByNetworkManager = false
    /// The captive-portal API URI the interface's DHCPv4 lease carried (option 114), as NetworkManager reports it.
    public var dhcpPortalAPI: String?
    /// The interface's captive-portal API (from a router advertisement, else DHCP) and what it last said.
    public var portalAPI: PortalAPIFacts?

    public init(
        isModem: Bool = false, generation: CellularGeneration? = nil, meteredByNetworkManager: Bool = false,
        dhcpPortalAPI: String? = nil, portalAPI: PortalAPIFacts? = nil
    ) {
        self.isModem = isModem
        self.generation = generation
        self.meteredByNetworkManager = meteredByNetworkManager
        self.dhcpPortalAPI = dhcpPortalAPI
        self.portalAPI = portalAPI
    }
}

/// The facts for every interface either service knows something about, by name (Cellular
/// builds it from the two services' cached objects).
public struct LinkFactsTable: Equatable, Sendable {
    public private(set) var byInterface: [String: LinkFacts] = [:]

    public init(_ byInterface: [String: LinkFacts] = [:]) {
        self.byInterface = byInterface
    }

    public subscript(interface: String) -> LinkFacts? {
        interface.isEmpty ? nil : byInterface[interface]
    }
}
