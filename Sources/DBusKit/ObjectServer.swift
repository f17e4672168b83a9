/// Exports objects on a connection: routes method calls by path, interface and
/// member, answers the standard interfaces from the same declarations, and
/// sends PropertiesChanged coalesced per loop turn.
public final class ObjectServer {
    public let connection: BusConnection
    private var objects: [String: [DBusInterface]] = [:]
    private var ownInterfaces: [String: [DBusInterface]] = [:]
    private let machineID: String
    private lazy var peer = StandardInterfaces.peerInterface(machineID: machineID)

    private struct ChangeKey: Hashable {
        let path: String
        let interface: String
    }
    private var changeOrder: [ChangeKey] = []
    private var changedNames: [ChangeKey: Set<String>] = [:]
    private var queuedSignals: [Message] = []
    private var flushScheduled = false

    public init(connection: BusConnection) {
        self.connection = connection
        machineID = BusConnection.machineID() ?? ""
        connection.onMethodCall = { [unowned self] message in
            handle(message)
            return true
        }
    }

    /// Exports `interfaces` at `path`, with Properties, Introspectable and Peer added.
    public func export(path: String, interfaces: [DBusInterface]) {
        precondition(Validation.isValidObjectPath(path), "invalid object path \(path)")
        ownInterfaces[path] = interfaces
        let properties = StandardInterfaces.propertiesInterface { interfaces }
        let introspectable = StandardInterfaces.introspectableInterface { [unowned self] in introspect(path) }
        objects[path] = interfaces + [properties, introspectable, peer]
    }

    /// The introspection document of `path` (an exported object or a parent of one).
    public func introspect(_ path: String) -> String {
        Introspection.document(interfaces: interfaces(at: path) ?? [], children: children(of: path))
    }

    private func children(of path: String) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        var names = Set<String>()
        for exported in objects.keys where exported.hasPrefix(prefix) && exported != path {
            if let first = exported.dropFirst(prefix.count).split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }

    private func interfaces(at path: String) -> [DBusInterface]? {
        if let interfaces = objects[path] { return interfaces }
        guard !children(of: path).isEmpty else { return nil }
        let introspectable = StandardInterfaces.introspectableInterface { [unowned self] in introspect(path) }
        return [introspectable, peer]
    }

    // MARK: Dispatch

    private func handle(_ message: Message) {
        let call: MethodCall
        do throws(DBusError) {
            call = MethodCall(message: message, arguments: try message.arguments()) { [unowned self] in connection.send($0) }
        } catch {
            if let reply = message.makeError(error) { connection.send(reply) }
            return
        }
        do throws(DBusError) {
            let method = try resolve(message)
            guard message.signature == method.inputSignature else {
                throw .invalidArgs("Method '\(method.name)' takes signature '\(method.inputSignature)', not '\(message.signature)'")
            }
            switch try method.handler(call) {
            case .reply(let values): call.reply(values)
            case .later: break
            }
        } catch {
            call.fail(error)
        }
    }

    private func resolve(_ message: Message) throws(DBusError) -> DBusMethod {
        let path = message.path ?? "/"
        let member = message.member ?? ""
        guard let interfaces = interfaces(at: path) else {
            throw .unknownObject("No such object path '\(path)'")
        }
        if let interfaceName = message.interface {
            guard let interface = interfaces.first(where: { $0.name == interfaceName }) else {
                throw .unknownInterface("No such interface '\(interfaceName)' at object path '\(path)'")
            }
            guard let method = interface.method(named: member) else {
                throw .unknownMethod("No such method '\(member)' in interface '\(interfaceName)' at object path '\(path)'")
            }
            return method
        }
        for interface in interfaces {
            if let method = interface.method(named: member) { return method }
        }
        throw .unknownMethod("No such method '\(member)' at object path '\(path)'")
    }

    // MARK: Notifications

    /// Notes that properties changed; one PropertiesChanged per interface goes
    /// out at the end of the loop turn, with values read through the getters.
    public func propertiesChanged(path: String, interface: String, _ names: [String]) {
        let key = ChangeKey(path: path, interface: interface)
        if changedNames[key] == nil { changeOrder.append(key) }
        changedNames[key, default: []].formUnion(names)
        scheduleFlush()
    }

    /// Queues a declared signal; it goes out after this turn's PropertiesChanged,
    /// so a client that reads its proxy's cache on the signal sees the new values.
    public func emit(path: String, interface interfaceName: String, signal name: String, _ arguments: [DBusValue]) throws(DBusError) {
        guard let declared = ownInterfaces[path]?.first(where: { $0.name == interfaceName })?.signal(named: name),
              declared.arguments.map(\.type) == arguments.map(\.type) else {
            throw .invalidArgs("signal \(interfaceName).\(name) is not declared with these arguments at \(path)")
        }
        let message = try Message.signal(path: path, interface: interfaceName, name: name)
        try message.append(arguments)
        queuedSignals.append(message)
        scheduleFlush()
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        connection.loop.atEndOfTurn { [weak self] in self?.flush() }
    }

    private func flush() {
        flushScheduled = false
        let keys = changeOrder
        let names = changedNames
        changeOrder = []
        changedNames = [:]
        for key in keys {
            guard let interface = ownInterfaces[key.path]?.first(where: { $0.name == key.interface }),
                  let changed = names[key],
                  let message = propertiesChangedMessage(path: key.path, interface: interface, changed: changed) else { continue }
            connection.send(message)
        }
        let signals = queuedSignals
        queuedSignals = []
        for signal in signals { connection.send(signal) }
    }

    func propertiesChangedMessage(path: String, interface: DBusInterface, changed: Set<String>) -> Message? {
        let properties = interface.properties.filter { changed.contains($0.name) }
        let loud = properties.contains { $0.changeMode == .emits || $0.changeMode == .invalidates }
        guard loud else { return nil }
        var values: [(String, DBusValue)] = []
        var invalidated: [String] = []
        for property in properties {
            switch property.changeMode {
            case .emits, .quiet: values.append((property.name, property.get()))
            case .invalidates: invalidated.append(property.name)
            case .const: break
            }
        }
        guard let message = try? Message.signal(path: path, interface: StandardInterfaces.properties, name: "PropertiesChanged"),
              (try? message.append([.string(interface.name), .variantMap(values), .stringArray(invalidated)])) != nil else {
            return nil
        }
        return message
    }
}
