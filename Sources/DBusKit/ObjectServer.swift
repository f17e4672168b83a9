import CDBus
import Glibc
import EventLoop

/// Exports objects on a connection: routes method calls by path, interface and
/// member, answers the standard interfaces from the same declarations, and
/// sends PropertiesChanged coalesced per loop turn.
///
/// Every call is checked before its body is read: descriptors are refused,
/// the signature must equal the declaration's, and only then does a handler
/// read the arguments it needs. Calls sent with NO_REPLY_EXPECTED get no
/// answer of any kind.
public final class ObjectServer {
    public let transport: MessageTransport
    public var loop: MainLoop { transport.loop }

    private final class ExportedObject {
        let path: String
        let own: [DBusInterface]
        /// `own` with Properties, Introspectable and Peer.
        let all: [DBusInterface]

        init(path: String, own: [DBusInterface], all: [DBusInterface]) {
            self.path = path
            self.own = own
            self.all = all
        }
    }
    // Read on every call; each access is one array operation whose closures only compare paths, so none
    // overlaps another and the run-time check is left out.
    @exclusivity(unchecked) private var objects: [ExportedObject] = []
    private let peer: DBusInterface
    /// Paths that are an ObjectManager for the objects below them.
    private var managerRoots: [String] = []

    private struct ChangeKey: Hashable {
        let path: String
        let interface: String
    }
    private var changeOrder: [ChangeKey] = []
    private var changedNames: [ChangeKey: Set<String>] = [:]
    private var queuedSignals: [Message] = []
    private var flushScheduled = false

    /// Serves calls arriving on `connection`.
    public convenience init(connection: BusConnection) {
        self.init(transport: connection)
        connection.routePeerMessagesToObjects()
        connection.onMethodCall = { [unowned self] raw in
            dispatch(raw: raw)
            return true
        }
    }

    /// Serves calls handed to `dispatch`, answering through `transport`.
    public init(transport: MessageTransport, machineID: String = BusConnection.machineID() ?? "") {
        self.transport = transport
        peer = StandardInterfaces.peerInterface(machineID: machineID)
    }

    /// Exports `interfaces` at `path`, with Properties, Introspectable and Peer added. Below
    /// an ObjectManager, a new object is announced with InterfacesAdded.
    public func export(path: String, interfaces: [DBusInterface]) {
        precondition(Validation.isValidObjectPath(path), "invalid object path \(path)")
        let properties = StandardInterfaces.propertiesInterface(interfaces)
        let introspectable = StandardInterfaces.introspectableInterface { [unowned self] in introspect(path) }
        let isNew = !objects.contains { $0.path == path }
        objects.removeAll { $0.path == path }
        let object = ExportedObject(path: path, own: interfaces, all: interfaces + [properties, introspectable, peer])
        objects.append(object)
        if isNew, let root = manager(of: path) {
            queueManagerSignal(
                root, "InterfacesAdded", [.objectPath(path), ObjectManager.interfacesAndProperties(object.all)])
        }
    }

    /// Stops serving `path`; below an ObjectManager, InterfacesRemoved says so. Calls to it
    /// get UnknownObject from then on.
    public func unexport(path: String) {
        guard let object = objects.first(where: { $0.path == path }) else { return }
        objects.removeAll { $0.path == path }
        changeOrder.removeAll { $0.path == path }
        changedNames = changedNames.filter { $0.key.path != path }
        if let root = manager(of: path) {
            queueManagerSignal(root, "InterfacesRemoved", [.objectPath(path), .stringArray(object.all.map(\.name))])
        }
    }

    /// Makes the object at `root` an org.freedesktop.DBus.ObjectManager for every object
    /// exported below it (not itself): GetManagedObjects, InterfacesAdded, InterfacesRemoved.
    public func manageObjects(under root: String) {
        guard let object = objects.first(where: { $0.path == root }) else {
            preconditionFailure("export \(root) before making it an ObjectManager")
        }
        managerRoots.append(root)
        let manager = ObjectManager.interface { [unowned self] in
            let prefix = root == "/" ? "/" : root + "/"
            return objects.filter { $0.path.hasPrefix(prefix) }.map { ($0.path, $0.all) }
        }
        export(path: root, interfaces: object.own + [manager])
    }

    /// The ObjectManager `path` is below, if any (the nearest).
    private func manager(of path: String) -> String? {
        managerRoots.filter { path.hasPrefix($0 == "/" ? "/" : $0 + "/") && path != $0 }.max { $0.count < $1.count }
    }

    private func queueManagerSignal(_ root: String, _ name: String, _ arguments: [DBusValue]) {
        guard let message = try? Message.signal(path: root, interface: ObjectManager.name, name: name),
            (try? message.append(arguments)) != nil
        else { return }
        queuedSignals.append(message)
        scheduleFlush()
    }

    /// The introspection document of `path` (an exported object or a parent of one).
    public func introspect(_ path: String) -> String {
        Introspection.document(interfaces: interfaces(at: path) ?? [], children: children(of: path))
    }

    private func children(of path: String) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        var names = Set<String>()
        for object in objects where object.path.hasPrefix(prefix) && object.path != path {
            if let first = object.path.dropFirst(prefix.count).split(separator: "/").first {
                names.insert(String(first))
            }
        }
        return names.sorted()
    }

    private func interfaces(at path: String) -> [DBusInterface]? {
        if let object = objects.first(where: { $0.path == path }) { return object.all }
        guard !children(of: path).isEmpty else { return nil }
        let introspectable = StandardInterfaces.introspectableInterface { [unowned self] in introspect(path) }
        return [introspectable, peer]
    }

    private static let longestPath = 4_096

    private func interfaces(at path: UnsafePointer<CChar>) -> [DBusInterface]? {
        for object in objects where object.path.equals(path) { return object.all }
        // No exported path is this long: a caller's huge path is not copied to find out.
        guard strnlen(path, Self.longestPath + 1) <= Self.longestPath else { return nil }
        return interfaces(at: String(cString: path))
    }

    // MARK: Dispatch

    /// Answers one incoming method call (now, or later through its handler).
    public func dispatch(_ message: Message) {
        dispatch(raw: message.raw)
    }

    func dispatch(raw: OpaquePointer) {
        let call = MethodCall(raw: raw, transport: transport)
        do throws(DBusError) {
            // The message owns its descriptors and closes them when it is freed, right after this call.
            guard dbus_message_contains_unix_fds(raw) == 0 else {
                throw .invalidArgs("No method of this service takes file descriptors")
            }
            let method = try resolve(raw)
            guard
                method.cInputSignature.withUnsafeBufferPointer({ dbus_message_has_signature(raw, $0.baseAddress) }) != 0
            else {
                let signature = dbus_message_get_signature(raw).map { String(cString: $0) } ?? ""
                throw .invalidArgs(
                    "Method '\(method.name)' takes signature '\(method.inputSignature)', not '\(signature)'")
            }
            call.replyLimit = method.replyLimit
            switch try method.handler(call) {
            case .reply(let values): call.reply(values)
            case .later: break
            }
        } catch {
            call.fail(error)
        }
    }

    private func resolve(_ raw: OpaquePointer) throws(DBusError) -> DBusMethod {
        // libdbus has validated the header: a method call has a path and a member.
        guard let path = dbus_message_get_path(raw), let member = dbus_message_get_member(raw) else {
            throw .unknownMethod("No path or member")
        }
        let interfaceName = dbus_message_get_interface(raw)
        // Peer belongs to the connection, so it answers at any path.
        if let interfaceName, peer.name.equals(interfaceName), let method = peer.method(named: member) {
            return method
        }
        guard let interfaces = interfaces(at: path) else {
            throw .unknownObject("No such object path '\(quotedName(path))'")
        }
        if let interfaceName {
            guard let interface = interfaces.first(where: { $0.name.equals(interfaceName) }) else {
                throw .unknownInterface(
                    "No such interface '\(quotedName(interfaceName))' at object path '\(quotedName(path))'")
            }
            guard let method = interface.method(named: member) else {
                throw .unknownMethod(
                    "No such method '\(quotedName(member))' in interface '\(interface.name)' at object path '\(quotedName(path))'"
                )
            }
            return method
        }
        for interface in interfaces {
            if let method = interface.method(named: member) { return method }
        }
        throw .unknownMethod("No such method '\(quotedName(member))' at object path '\(quotedName(path))'")
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
    public func emit(
        path: String, interface interfaceName: String, signal name: String, _ arguments: [DBusValue]
    ) throws(DBusError) {
        guard let declared = ownInterface(path: path, name: interfaceName)?.signal(named: name),
            declared.arguments.map(\.type) == arguments.map(\.type)
        else {
            throw .invalidArgs("signal \(interfaceName).\(name) is not declared with these arguments at \(path)")
        }
        let message = try Message.signal(path: path, interface: interfaceName, name: name)
        try message.append(arguments)
        queuedSignals.append(message)
        scheduleFlush()
    }

    private func ownInterface(path: String, name: String) -> DBusInterface? {
        objects.first { $0.path == path }?.own.first { $0.name == name }
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.atEndOfTurn { [weak self] in self?.flush() }
    }

    private func flush() {
        flushScheduled = false
        let keys = changeOrder
        let names = changedNames
        changeOrder = []
        changedNames = [:]
        for key in keys {
            guard let interface = ownInterface(path: key.path, name: key.interface),
                let changed = names[key],
                let message = propertiesChangedMessage(path: key.path, interface: interface, changed: changed)
            else { continue }
            transport.send(message)
        }
        let signals = queuedSignals
        queuedSignals = []
        for signal in signals { transport.send(signal) }
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
        guard
            let message = try? Message.signal(
                path: path, interface: StandardInterfaces.properties, name: "PropertiesChanged"),
            (try? message.append([.string(interface.name), .variantMap(values), .stringArray(invalidated)])) != nil
        else {
            return nil
        }
        return message
    }
}
