import NetAddress

/// What the kernel has told us of links, addresses and default routes.
/// Pure state: messages in, a changed flag out.
public struct LinkTable: Equatable, Sendable {
    public private(set) var links: [Int32: Link] = [:]
    private var addressesByKey: [InterfaceAddress.Key: InterfaceAddress] = [:]
    public private(set) var defaultRoutes: Set<Route> = []

    public init() {}

    public var addresses: [InterfaceAddress] { Array(addressesByKey.values) }

    /// Every link's name, by index.
    public var linkNames: [Int32: String] { links.mapValues(\.name) }

    /// Whether `address` is one of this machine's (on any interface); an IPv4-mapped IPv6 address is
    /// judged as the IPv4 address it carries.
    public func isLocal(_ address: IPAddress) -> Bool {
        let wanted = address.unmapped.bytes
        return addressesByKey.values.contains { $0.address.bytes == wanted }
    }

    public func addresses(on index: Int32, family: Int32) -> [InterfaceAddress] {
        addressesByKey.values.filter { $0.index == index && $0.address.family == family }
    }

    /// The families that have a default route now.
    public var routedFamilies: IPFamilies {
        var families = IPFamilies()
        for route in defaultRoutes {
            if let family = IPFamily(number: route.family) { families.insert(family) }
        }
        return families
    }

    /// Whose connections the traffic evidence counts for a route over `interface` to an address of
    /// `family`: the usable addresses of that family on it (nil when no link has that name).
    public func trafficSources(interface: String, family: IPFamily) -> [IPAddress]? {
        guard let link = links.values.first(where: { $0.name == interface }) else { return nil }
        return addresses(on: link.index, family: family.number).filter(\.isUsable).map(\.address)
    }

    public mutating func removeAll() {
        self = LinkTable()
    }

    /// Applies one message; returns whether anything that affects reachability changed.
    @discardableResult
    public mutating func apply(_ message: RouteMessage) -> Bool {
        switch message {
        case .newLink(let link):
            guard links[link.index] != link else { return false }
            links[link.index] = link
            return true
        case .deleteLink(let index):
            let hadAddresses = addressesByKey.values.contains { $0.index == index }
            addressesByKey = addressesByKey.filter { $0.value.index != index }
            let before = defaultRoutes.count
            defaultRoutes = defaultRoutes.filter { $0.outputInterface != index }
            return links.removeValue(forKey: index) != nil || hadAddresses || before != defaultRoutes.count
        case .newAddress(let address):
            guard addressesByKey[address.key] != address else { return false }
            addressesByKey[address.key] = address
            return true
        case .deleteAddress(let address):
            return addressesByKey.removeValue(forKey: address.key) != nil
        case .newRoute(let route, _):
            // Every route event may change the kernel's choice for the target.
            if route.isDefault { defaultRoutes.insert(route) }
            return true
        case .deleteRoute(let route):
            if route.isDefault { defaultRoutes.remove(route) }
            return true
        case .done, .error, .ignored, .routerOptions:
            return false
        }
    }
}
