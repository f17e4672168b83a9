import CDBus
import Glibc
import EventLoop

/// Which bus to connect to.
public enum BusAddress: Sendable, Equatable {
    case system
    case session
    case address(String)
}

/// What the bus answered to RequestName.
public enum NameRequestResult: Sendable, Equatable {
    case primaryOwner, inQueue, exists, alreadyOwner
}

/// A private connection to a message bus, driven by a MainLoop.
///
/// Everything here runs on the loop's thread. Exit-on-disconnect is off: the
/// owner learns of a lost bus through `onDisconnected`.
public final class BusConnection {
    let raw: OpaquePointer
    public let loop: MainLoop
    /// The name the bus gave this connection; "" until a connection opened with `connect` is registered.
    public private(set) var uniqueName: String
    private var isClosed = false
    private let handlers: Handlers

    /// Where incoming messages go; kept in a box that libdbus retains.
    final class Handlers {
        var onDisconnected: (() -> Void)?
        var onSignal: ((Message) -> Void)?
        var onMethodCall: ((OpaquePointer) -> Bool)?
        var subscriptions: [UInt64: (rule: MatchRule, handler: (Message) -> Void)] = [:]
        var nextSubscription: UInt64 = 0

        func deliver(_ message: Message) {
            onSignal?(message)
            guard !subscriptions.isEmpty else { return }
            for (id, subscription) in subscriptions.sorted(by: { $0.key < $1.key })
            where subscription.rule.matches(message) {
                // An earlier handler may have cancelled this one.
                guard subscriptions[id] != nil else { continue }
                subscription.handler(message)
            }
        }
    }

    public var onDisconnected: (() -> Void)? {
        get { handlers.onDisconnected }
        set { handlers.onDisconnected = newValue }
    }

    /// Every signal the connection receives (after match rules), the bus's own included.
    public var onSignal: ((Message) -> Void)? {
        get { handlers.onSignal }
        set { handlers.onSignal = newValue }
    }

    /// Method calls to any object path (libdbus's message, valid during the call);
    /// return false to let libdbus answer UnknownMethod.
    var onMethodCall: ((OpaquePointer) -> Bool)? {
        get { handlers.onMethodCall }
        set { handlers.onMethodCall = newValue }
    }

    /// Connects and registers with the bus (Hello). Blocks only during start-up.
    public convenience init(_ bus: BusAddress, loop: MainLoop) throws(DBusError) {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let connection: OpaquePointer?
        switch bus {
        case .system:
            connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session:
            connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            guard Validation.isValidString(address) else { throw .invalidArgs("bad bus address") }
            if let opened = dbus_connection_open_private(address, &error) {
                if dbus_bus_register(opened, &error) == 0 {
                    dbus_connection_close(opened)
                    dbus_connection_unref(opened)
                    connection = nil
                } else {
                    connection = opened
                }
            } else {
                connection = nil
            }
        }
        guard let connection else { throw Self.failure(&error, "cannot connect to the bus") }
        try self.init(taking: connection, loop: loop)
    }

    /// Opens a connection without waiting for the bus: the socket at once (a local one connects
    /// or fails at once), the authentication and Hello later, on the loop. `registered` runs
    /// there once: with nil when the bus has named the connection, else with why it did not.
    /// Nothing may be sent on the connection before that.
    public static func connect(
        _ bus: BusAddress, loop: MainLoop,
        registered: @escaping (DBusError?) -> Void
    ) throws(DBusError) -> BusConnection {
        let address: String
        switch bus {
        case .system:
            address =
                getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) } ?? "unix:path=/run/dbus/system_bus_socket"
        case .session:
            guard let session = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }) else {
                throw .failed("DBUS_SESSION_BUS_ADDRESS is not set")
            }
            address = session
        case .address(let given):
            address = given
        }
        guard Validation.isValidString(address) else { throw .invalidArgs("bad bus address") }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let opened = dbus_connection_open_private(address, &error) else {
            throw failure(&error, "cannot connect to the bus")
        }
        let connection = try BusConnection(taking: opened, loop: loop)
        guard let hello = try? Message.busCall("Hello", []) else {
            connection.close()
            throw .failed("out of memory")
        }
        connection.send(hello) { [weak connection] result in
            guard let connection else { return }
            switch result {
            case .success(let reply):
                guard let name = reply.firstStringArgument, Validation.isValidBusName(name),
                    dbus_bus_set_unique_name(connection.raw, name) != 0
                else {
                    return registered(.failed("the bus answered Hello with no name"))
                }
                connection.uniqueName = name
                registered(nil)
            case .failure(let error):
                registered(error)
            }
        }
        return connection
    }

    private static func failure(_ error: inout CDBus.DBusError, _ what: String) -> DBusError {
        if dbus_error_is_set(&error) != 0 {
            let name = CDBus_error_name(&error).map { String(cString: $0) } ?? DBusError.failed("").name
            let message = CDBus_error_message(&error).map { String(cString: $0) } ?? what
            return DBusError(name: name, message: message)
        }
        return .failed(what)
    }

    /// Takes over an open connection (registered or not) and attaches it to the loop.
    private init(taking connection: OpaquePointer, loop: MainLoop) throws(DBusError) {
        raw = connection
        self.loop = loop
        uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        handlers = Handlers()
        dbus_connection_set_exit_on_disconnect(connection, 0)

        let context = Unmanaged.passRetained(handlers).toOpaque()
        guard dbus_connection_add_filter(connection, filterMessage, context, releaseHandlers) != 0 else {
            Unmanaged<Handlers>.fromOpaque(context).release()
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw .failed("out of memory")
        }
        guard LoopBinding.install(loop: loop, connection: connection) else {
            close()
            throw .failed("cannot attach the connection to the main loop")
        }
    }

    deinit {
        close()
    }

    /// Closes the connection and detaches it from the loop.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        dbus_connection_close(raw)
        LoopBinding.uninstall(connection: raw)
        dbus_connection_remove_filter(raw, filterMessage, Unmanaged.passUnretained(handlers).toOpaque())
        dbus_connection_unref(raw)
    }

    /// A message larger than `bytes` makes libdbus drop the connection instead of
    /// buffering it; reading pauses while twice that waits to be dispatched.
    public func limitIncomingMessages(toBytes bytes: Int) {
        dbus_connection_set_max_message_size(raw, bytes)
        dbus_connection_set_max_received_size(raw, bytes * 2)
    }

    public var isConnected: Bool { !isClosed && dbus_connection_get_is_connected(raw) != 0 }

    /// Hands Peer calls addressed to us to our own object handlers instead of
    /// letting libdbus answer them (it would answer any arguments, and answer
    /// calls that asked for no reply).
    func routePeerMessagesToObjects() {
        dbus_connection_set_route_peer_messages(raw, 1)
    }

    /// Queues `message` for sending; libdbus writes it as the socket allows.
    public func send(_ message: Message) {
        guard !isClosed else { return }
        _ = dbus_connection_send(raw, message.raw, nil)
    }

    public func send(taking message: OpaquePointer) {
        defer { dbus_message_unref(message) }
        guard !isClosed else { return }
        _ = dbus_connection_send(raw, message, nil)
    }

    /// Writes out everything queued (for use just before exiting).
    public func flush() {
        guard !isClosed else { return }
        dbus_connection_flush(raw)
    }

    /// RequestName; blocking, so for start-up only.
    public func requestName(
        _ name: String, allowReplacement: Bool, replaceExisting: Bool
    ) throws(DBusError) -> NameRequestResult {
        guard Validation.isValidBusName(name) else { throw .invalidArgs("invalid bus name \(name)") }
        var flags = CDBus_NAME_FLAG_DO_NOT_QUEUE
        if allowReplacement { flags |= CDBus_NAME_FLAG_ALLOW_REPLACEMENT }
        if replaceExisting { flags |= CDBus_NAME_FLAG_REPLACE_EXISTING }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let result = dbus_bus_request_name(raw, name, flags, &error)
        if dbus_error_is_set(&error) != 0 {
            throw DBusError(
                name: CDBus_error_name(&error).map { String(cString: $0) } ?? "",
                message: CDBus_error_message(&error).map { String(cString: $0) } ?? "RequestName failed")
        }
        switch result {
        case CDBus_REQUEST_NAME_REPLY_PRIMARY_OWNER: return .primaryOwner
        case CDBus_REQUEST_NAME_REPLY_IN_QUEUE: return .inQueue
        case CDBus_REQUEST_NAME_REPLY_ALREADY_OWNER: return .alreadyOwner
        default: return .exists
        }
    }

    /// Sends a call and waits for its reply. For command-line clients only: it
    /// blocks, so nothing on a daemon's loop may use it.
    public func callBlocking(_ message: Message, timeoutMilliseconds: Int32) throws(DBusError) -> Message {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(raw, message.raw, timeoutMilliseconds, &error)
        else {
            throw DBusError(
                name: CDBus_error_name(&error).map { String(cString: $0) } ?? DBusError.failed("").name,
                message: CDBus_error_message(&error).map { String(cString: $0) } ?? "no reply")
        }
        return Message(taking: reply)
    }

    /// Sends a call to the bus daemon without waiting for (or wanting) its reply.
    public func callBus(_ member: String, _ arguments: [DBusValue]) {
        guard let message = try? Message.busCall(member, arguments) else { return }
        dbus_message_set_no_reply(message.raw, 1)
        send(message)
    }

    public func addMatch(_ rule: String) { callBus("AddMatch", [.string(rule)]) }

    /// Asks the bus for the signals `rule` matches and hands each one, on the loop,
    /// to `handler` until the subscription is cancelled or released. nil when the
    /// rule has an invalid part.
    public func subscribe(_ rule: MatchRule, _ handler: @escaping (Message) -> Void) -> SignalSubscription? {
        guard let text = rule.text else { return nil }
        handlers.nextSubscription += 1
        let id = handlers.nextSubscription
        handlers.subscriptions[id] = (rule, handler)
        addMatch(text)
        return SignalSubscription(connection: self, id: id, rule: text)
    }

    func unsubscribe(_ id: UInt64, rule: String) {
        guard handlers.subscriptions.removeValue(forKey: id) != nil, isConnected else { return }
        callBus("RemoveMatch", [.string(rule)])
    }

    /// This machine's D-Bus machine id.
    public static func machineID() -> String? {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let id = dbus_try_get_local_machine_id(&error) else { return nil }
        defer { dbus_free(id) }
        return String(cString: id)
    }
}

private func releaseHandlers(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<BusConnection.Handlers>.fromOpaque(data).release()
}

/// Method calls are dispatched here, not through libdbus's object tree: the tree splits a call's path into a
/// string per component before it looks anything up, so a path of tens of MiB would cost millions of allocations.
private func filterMessage(
    _ connection: OpaquePointer?, _ raw: OpaquePointer?, _ data: UnsafeMutableRawPointer?
) -> DBusHandlerResult {
    guard let raw, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let handlers = Unmanaged<BusConnection.Handlers>.fromOpaque(data).takeUnretainedValue()
    if dbus_message_get_type(raw) == CDBus_MESSAGE_TYPE_METHOD_CALL {
        return handlers.onMethodCall?(raw) == true ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
    guard dbus_message_get_type(raw) == CDBus_MESSAGE_TYPE_SIGNAL else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let message = Message(retaining: raw)
    if message.isSignal(interface: "org.freedesktop.DBus.Local", member: "Disconnected"),
        message.path == "/org/freedesktop/DBus/Local"
    {
        handlers.onDisconnected?()
        return DBUS_HANDLER_RESULT_HANDLED
    }
    handlers.deliver(message)
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
}
