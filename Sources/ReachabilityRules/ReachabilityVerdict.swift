import NetAddress

/// What the reachability engine concludes about the path to the target.
public struct ReachabilityVerdict: Equatable, Sendable {
    public var usable: Bool
    /// The route's output interface ("" when there is no route).
    public var interface: String
    public var kind: InterfaceKind?
    public var source: String
    /// Why the path is not usable; "" when it is.
    public var reason: String
    /// The route's next hop; nil when the destination is on-link (or there is no route).
    public var gateway: IPAddress?
    /// The families with a default route when this was said (so a family's default route coming or
    /// going reaches every watch, as the path through a NAT64 prefix depends on it).
    public var routedFamilies: IPFamilies = []
    /// The route's output interface's index (0 when there is no route).
    public var interfaceIndex: Int32 = 0
    /// The route's link resolves its neighbours (ARP, NDP): neither point-to-point nor NOARP.
    public var hasNeighbors = false
    /// The bytes of the address this verdict is about (nil: a default route's, for no address): a watch that moved
    /// on since may still be handed one about the address it watched before. (Bytes, not an `IPAddress`: a zone's
    /// name would make every copy of a verdict count a reference, and verdicts are copied at every step.)
    public var destination: AddressBytes?
    /// The IPv6 networks of the route's interface's own addresses: no NAT64 prefix lies inside one, whoever names it.
    public var onLinkIPv6: [OnLinkNetwork] = []

    public init(
        usable: Bool, interface: String = "", kind: InterfaceKind? = nil, source: String = "", reason: String = ""
    ) {
        self.usable = usable
        self.interface = interface
        self.kind = kind
        self.source = source
        self.reason = reason
    }

    /// The route as the kernel chose it for the destination: its interface and next hop (nil: not usable).
    public var hostRoute: HostRoute? {
        usable && interfaceIndex != 0 ? HostRoute(interfaceIndex: interfaceIndex, gateway: gateway) : nil
    }

    static func unusable(_ reason: String, interface: String = "") -> ReachabilityVerdict {
        ReachabilityVerdict(usable: false, interface: interface, reason: reason)
    }
}

/// Where the kernel's route to an address leaves this machine: its output interface and next hop (nil: on-link).
/// Two addresses whose routes are equal are routed alike.
public struct HostRoute: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var gateway: IPAddress?

    public init(interfaceIndex: Int32, gateway: IPAddress?) {
        self.interfaceIndex = interfaceIndex
        self.gateway = gateway
    }
}

/// The kernel's answer to RTM_GETROUTE for the target.
public enum RouteLookup: Equatable, Sendable {
    case route(Route)
    case failed(errno: Int32)
}

/// Turns tables and a route lookup into a verdict. Pure.
public enum ReachabilityEvaluation {
    /// `previousInterface` is the link the last route used: when it went down,
    /// the kernel deleted its routes, and that is the reason worth telling.
    public static func verdict(
        target: IPAddress, lookup: RouteLookup, table: LinkTable, previousInterface: Int32? = nil,
        classify: (Link) -> InterfaceKind,
        describeError: (Int32) -> String = ReachabilityEvaluation.errorNumber
    ) -> ReachabilityVerdict {
        let route: Route
        switch lookup {
        case .failed(let code):
            // No route any more, so no Interface; the reason still names the link.
            if let index = previousInterface, let link = table.links[index] {
                if !link.isUp { return .unusable("interface \(link.name) is down") }
                if !link.hasCarrier { return .unusable("interface \(link.name) has no carrier") }
            }
            if [
                KernelNumbers.errorNetworkUnreachable, KernelNumbers.errorHostUnreachable, KernelNumbers.errorAccess,
                KernelNumbers.errorInvalid,
            ].contains(code) {
                return .unusable("no route to \(target)")
            }
            return .unusable("route lookup for \(target) failed: \(describeError(code))")
        case .route(let found):
            route = found
        }
        guard route.type == KernelNumbers.routeUnicast || route.type == KernelNumbers.routeLocal else {
            return .unusable("no route to \(target) (the route is \(routeTypeName(route.type)))")
        }
        guard let index = route.outputInterface else { return .unusable("no route to \(target)") }
        guard let link = table.links[index] else {
            return .unusable("the route to \(target) uses an unknown interface (index \(index))")
        }
        var verdict = linkVerdict(
            link, family: target.family, preferredSource: route.preferredSource, table: table,
            classify: classify)
        if verdict.usable { verdict.gateway = route.gateway }
        return verdict
    }

    /// An errno's words where the system's (strerror) are not at hand.
    public static func errorNumber(_ code: Int32) -> String { "error \(code)" }

    /// Before the host resolves: is there a default route over a working link?
    public static func defaultRouteVerdict(
        families: [IPFamily], table: LinkTable,
        classify: (Link) -> InterfaceKind
    ) -> ReachabilityVerdict {
        var firstProblem: ReachabilityVerdict?
        let candidates = table.defaultRoutes
            .filter { IPFamily(number: $0.family).map(families.contains) ?? false }
            .sorted { ($0.family, $0.priority) < ($1.family, $1.priority) }
        for route in candidates {
            guard let index = route.outputInterface, let link = table.links[index] else { continue }
            var verdict = linkVerdict(
                link, family: Int32(route.family), preferredSource: route.preferredSource,
                table: table, classify: classify)
            if verdict.usable {
                verdict.gateway = route.gateway
                return verdict
            }
            firstProblem = firstProblem ?? verdict
        }
        if let firstProblem { return firstProblem }
        let names = families.map(\.description).joined(separator: " or ")
        return .unusable("no \(names) default route")
    }

    private static func linkVerdict(
        _ link: Link, family: Int32, preferredSource: IPAddress?, table: LinkTable,
        classify: (Link) -> InterfaceKind
    ) -> ReachabilityVerdict {
        guard link.isUp else { return .unusable("interface \(link.name) is down", interface: link.name) }
        guard link.hasCarrier else { return .unusable("interface \(link.name) has no carrier", interface: link.name) }
        guard link.isRunning else { return .unusable("interface \(link.name) is not running", interface: link.name) }
        let addresses = table.addresses(on: link.index, family: family)
        let source: InterfaceAddress?
        if let preferredSource {
            // The kernel chose it; the table says whether DAD has finished with it.
            source =
                addresses.first { $0.address == preferredSource }
                ?? InterfaceAddress(index: link.index, address: preferredSource, prefixLength: 0)
        } else {
            source =
                addresses.filter(\.isUsable).min { $0.isDeprecated == false && $1.isDeprecated }
                ?? addresses.first
        }
        let familyName = IPFamily(number: family)?.description ?? "IP"
        guard let source else {
            return .unusable("interface \(link.name) has no \(familyName) address", interface: link.name)
        }
        if source.isDuplicate {
            return .unusable(
                "interface \(link.name): address \(source.address) is a duplicate on the network", interface: link.name)
        }
        if source.isTentative {
            return .unusable(
                "interface \(link.name): address \(source.address) is still being checked for duplicates",
                interface: link.name)
        }
        var verdict = ReachabilityVerdict(
            usable: true, interface: link.name, kind: classify(link), source: source.address.description)
        verdict.interfaceIndex = link.index
        verdict.hasNeighbors = link.hasNeighbors
        return verdict
    }

    static func routeTypeName(_ type: UInt8) -> String {
        switch type {
        case KernelNumbers.routeUnreachable: "unreachable"
        case KernelNumbers.routeBlackhole: "a blackhole"
        case KernelNumbers.routeProhibit: "prohibited"
        case KernelNumbers.routeThrow: "a throw route"
        default: "of type \(type)"
        }
    }
}

/// A network an interface's address puts on the link: the address and its prefix length.
public struct OnLinkNetwork: Hashable, Sendable {
    public var address: IPAddress
    public var length: UInt8

    public init(address: IPAddress, length: UInt8) {
        self.address = address
        self.length = length
    }

    /// Whether `prefix` lies inside this network (it would send IPv4 to the link itself).
    public func contains(_ prefix: Nat64Prefix) -> Bool {
        Nat64Prefix.covers(network: address, length: length, prefix: prefix)
    }
}
