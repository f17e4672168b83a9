import NetAddress

/// A network interface as rtnetlink describes it.
public struct Link: Equatable, Sendable {
    public var index: Int32
    public var name: String
    public var flags: UInt32
    public var operState: UInt8
    /// ARPHRD_* hardware type.
    public var type: UInt16
    /// IFLA_INFO_KIND ("veth", "wireguard", "tun", …) for virtual links.
    public var kind: String?

    public init(index: Int32, name: String, flags: UInt32, operState: UInt8 = 0, type: UInt16, kind: String? = nil) {
        self.index = index
        self.name = name
        self.flags = flags
        self.operState = operState
        self.type = type
        self.kind = kind
    }

    public var isUp: Bool { flags & KernelNumbers.linkUp != 0 }
    public var isRunning: Bool { flags & KernelNumbers.linkRunning != 0 }
    public var hasCarrier: Bool { flags & KernelNumbers.linkLowerUp != 0 }
    /// Whether the link resolves neighbours' link-layer addresses (not point-to-point, not NOARP).
    public var hasNeighbors: Bool { flags & (KernelNumbers.linkPointToPoint | KernelNumbers.linkNoArp) == 0 }
}

/// An address assigned to an interface.
public struct InterfaceAddress: Hashable, Sendable {
    public var index: Int32
    public var address: IPAddress
    public var prefixLength: UInt8
    /// IFA_F_* flags (from IFA_FLAGS when present, which has all 32 bits).
    public var flags: UInt32
    public var scope: UInt8

    public init(index: Int32, address: IPAddress, prefixLength: UInt8, flags: UInt32 = 0, scope: UInt8 = 0) {
        self.index = index
        self.address = address
        self.prefixLength = prefixLength
        self.flags = flags
        self.scope = scope
    }

    public var isTentative: Bool { flags & KernelNumbers.addressTentative != 0 }
    public var isDuplicate: Bool { flags & KernelNumbers.addressDuplicate != 0 }
    public var isDeprecated: Bool { flags & KernelNumbers.addressDeprecated != 0 }
    /// Usable as a source: duplicate address detection passed (deprecated still works).
    public var isUsable: Bool { !isTentative && !isDuplicate }

    /// What identifies the address across updates (flags change in place).
    var key: Key { Key(index: index, address: address, prefixLength: prefixLength) }

    struct Key: Hashable {
        let index: Int32
        let address: IPAddress
        let prefixLength: UInt8
    }
}

/// A route, from a dump, an event or a lookup reply.
public struct Route: Hashable, Sendable {
    public var family: UInt8
    public var table: UInt32
    /// RTN_* route type.
    public var type: UInt8
    public var destination: IPAddress?
    public var destinationLength: UInt8
    public var outputInterface: Int32?
    public var gateway: IPAddress?
    public var preferredSource: IPAddress?
    public var priority: UInt32

    public init(
        family: UInt8, table: UInt32 = KernelNumbers.mainTable, type: UInt8 = KernelNumbers.routeUnicast,
        destination: IPAddress? = nil, destinationLength: UInt8 = 0, outputInterface: Int32? = nil,
        gateway: IPAddress? = nil, preferredSource: IPAddress? = nil, priority: UInt32 = 0
    ) {
        self.family = family
        self.table = table
        self.type = type
        self.destination = destination
        self.destinationLength = destinationLength
        self.outputInterface = outputInterface
        self.gateway = gateway
        self.preferredSource = preferredSource
        self.priority = priority
    }

    public var isDefault: Bool { destinationLength == 0 && type == KernelNumbers.routeUnicast }
}

/// One rtnetlink message, parsed.
public enum RouteMessage: Equatable, Sendable {
    case newLink(Link)
    case deleteLink(index: Int32)
    case newAddress(InterfaceAddress)
    case deleteAddress(InterfaceAddress)
    case newRoute(Route, sequence: UInt32)
    case deleteRoute(Route)
    /// Options of a router advertisement received on interface `index`, as the kernel passed them on, with the
    /// advertisement's source address (NDUSEROPT_SRCADDR; nil when the kernel gave none).
    case routerOptions(index: Int32, options: [UInt8], source: IPAddress? = nil)
    /// The end of a multipart dump.
    case done(sequence: UInt32)
    /// An acknowledgement (errno 0) or error answering request `sequence`.
    case error(sequence: UInt32, errno: Int32)
    /// A well-formed message of a type the engine has no use for.
    case ignored(type: UInt16)
}
