/// A remote object as a proxy keeps it: its path and the properties of the
/// interfaces being followed, by interface and name.
public struct RemoteObject: Equatable, Sendable {
    public let path: String
    public internal(set) var interfaces: [String: [String: DBusValue]]

    public init(path: String, interfaces: [String: [String: DBusValue]] = [:]) {
        self.path = path
        self.interfaces = interfaces
    }

    /// A cached property's value (variants unwrapped); nil when unknown.
    public func property(_ name: String, of interface: String) -> DBusValue? {
        interfaces[interface]?[name]
    }

    /// `a{sa{sv}}`: the interfaces among `wanted` with their properties.
    static func interfaceMap(_ value: DBusValue, wanted: Set<String>) -> [String: [String: DBusValue]]? {
        guard case .dictionary(.string, _, let entries) = value else { return nil }
        var map: [String: [String: DBusValue]] = [:]
        for entry in entries {
            guard let interface = entry.key.stringValue, wanted.contains(interface),
                let properties = entry.value.propertyMap
            else { continue }
            map[interface] = properties
        }
        return map
    }
}
