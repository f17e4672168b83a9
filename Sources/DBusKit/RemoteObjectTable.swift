/// What a RemoteObjectManager knows of the remote objects, and how each message the
/// followed service sends changes it: pure, so the fuzzer and the tests drive it with
/// messages alone. Only the followed interfaces are kept, and at most `objectLimit`
/// objects; anything of another shape changes nothing.
public struct RemoteObjectTable: Sendable {
    public let interfaces: Set<String>
    public let objectLimit: Int
    public private(set) var objects: [String: RemoteObject] = [:]

    public init(interfaces: Set<String>, objectLimit: Int) {
        self.interfaces = interfaces
        self.objectLimit = objectLimit
    }

    /// Replaces everything with GetManagedObjects' answer; false (and nothing changed) when
    /// it is not an `a{oa{sa{sv}}}`.
    public mutating func load(_ reply: Message) -> Bool {
        guard reply.signature == "a{oa{sa{sv}}}", let tree = (try? reply.arguments())?.first,
            case .dictionary(.objectPath, _, let entries) = tree
        else { return false }
        var loaded: [String: RemoteObject] = [:]
        for entry in entries where loaded.count < objectLimit {
            guard case .objectPath(let objectPath) = entry.key,
                let map = RemoteObject.interfaceMap(entry.value, wanted: interfaces), !map.isEmpty
            else { continue }
            loaded[objectPath] = RemoteObject(path: objectPath, interfaces: map)
        }
        objects = loaded
        return true
    }

    public mutating func clear() {
        objects = [:]
    }

    /// What a signal asks for after it was applied.
    public enum Outcome: Equatable, Sendable {
        /// Nothing changed (another shape, another interface, an unknown object).
        case unchanged
        case changed
        /// Changed, and properties of `interface` at `path` were invalidated without a value: read them again.
        case refresh(path: String, interface: String)
    }

    /// Applies InterfacesAdded, InterfacesRemoved or PropertiesChanged; the caller has
    /// checked that the service's current owner sent it.
    public mutating func apply(_ message: Message) -> Outcome {
        switch message.member {
        case "InterfacesAdded":
            guard message.signature == "oa{sa{sv}}", let arguments = try? message.arguments(), arguments.count == 2,
                case .objectPath(let objectPath) = arguments[0],
                let map = RemoteObject.interfaceMap(arguments[1], wanted: interfaces), !map.isEmpty
            else { return .unchanged }
            guard objects[objectPath] != nil || objects.count < objectLimit else { return .unchanged }
            var object = objects[objectPath] ?? RemoteObject(path: objectPath)
            object.interfaces.merge(map) { $1 }
            objects[objectPath] = object
            return .changed
        case "InterfacesRemoved":
            guard message.signature == "oas", let arguments = try? message.arguments(), arguments.count == 2,
                case .objectPath(let objectPath) = arguments[0],
                case .array(.string, let names) = arguments[1], var object = objects[objectPath]
            else { return .unchanged }
            let removed = names.compactMap(\.stringValue).filter { object.interfaces[$0] != nil }
            guard !removed.isEmpty else { return .unchanged }
            removed.forEach { object.interfaces[$0] = nil }
            objects[objectPath] = object.interfaces.isEmpty ? nil : object
            return .changed
        case "PropertiesChanged":
            // The path and the interface come from the header and the first argument: an object or
            // interface not followed costs no decoding of the rest.
            guard message.signature == "sa{sv}as", let objectPath = message.path, var object = objects[objectPath],
                let interface = message.firstStringArgument, interfaces.contains(interface),
                object.interfaces[interface] != nil,
                let arguments = try? message.arguments(), arguments.count == 3,
                let changed = arguments[1].propertyMap,
                case .array(.string, let invalidated) = arguments[2]
            else { return .unchanged }
            object.interfaces[interface]?.merge(changed) { $1 }
            objects[objectPath] = object
            return invalidated.isEmpty ? .changed : .refresh(path: objectPath, interface: interface)
        default:
            return .unchanged
        }
    }

    /// GetAll's answer for `interface` at `path`, read again after an invalidation.
    public mutating func refreshed(_ reply: Message, path: String, interface: String) -> Bool {
        guard reply.signature == "a{sv}", let values = (try? reply.arguments())?.first,
            let map = values.propertyMap, var object = objects[path], object.interfaces[interface] != nil
        else { return false }
        object.interfaces[interface] = map
        objects[path] = object
        return true
    }
}
