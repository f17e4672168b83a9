import EventLoop
import Timekeeping

/// A client of a remote org.freedesktop.DBus.ObjectManager, as GDBusObjectManagerClient
/// is: it follows the service's owner, loads every object with GetManagedObjects, and
/// keeps their properties current from InterfacesAdded, InterfacesRemoved and
/// PropertiesChanged. Only the interfaces asked for are kept, and at most
/// `objectLimit` objects. Everything is asynchronous on the connection's loop: a
/// service that answers slowly or never delays nothing but its own objects.
public final class RemoteObjectManager {
    public let service: String
    public let path: String
    public var interfaces: Set<String> { table.interfaces }
    public var objectLimit: Int { table.objectLimit }
    /// The objects with at least one followed interface, by path.
    public var objects: [String: RemoteObject] { table.objects }
    private var table: RemoteObjectTable
    /// True once the objects are loaded, or the service is known to be absent.
    public private(set) var isReady = false
    /// Whether the service is on the bus now.
    public var hasOwner: Bool { owner.owner != nil }
    /// After every change of `objects` or `isReady`.
    public var onChange: (() -> Void)?

    private let connection: BusConnection
    private let owner: NameOwnerWatch
    private var subscriptions: [SignalSubscription] = []
    private var load: PendingReply?
    private var refreshes: [String: PendingReply] = [:]
    private var retryTimer: LoopTimer?
    private var failedLoads = 0

    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"
    /// How long a GetManagedObjects or GetAll may take before it counts as failed.
    public var callTimeoutMilliseconds: Int32 = 10_000

    public init(
        connection: BusConnection, service: String, path: String, interfaces: Set<String>, objectLimit: Int = 1024
    ) {
        self.connection = connection
        self.service = service
        self.path = path
        table = RemoteObjectTable(interfaces: interfaces, objectLimit: objectLimit)
        owner = NameOwnerWatch(connection: connection, name: service)
        // Subscribed before anything is loaded, so no change falls between the load and the signals.
        let rules =
            [
                MatchRule(sender: service, path: path, interface: Self.objectManager, member: "InterfacesAdded"),
                MatchRule(sender: service, path: path, interface: Self.objectManager, member: "InterfacesRemoved"),
            ]
            + interfaces.sorted().map {
                MatchRule(
                    sender: service, pathNamespace: path == "/" ? nil : path, interface: Self.properties,
                    member: "PropertiesChanged", arg0: $0)
            }
        for rule in rules {
            if let subscription = connection.subscribe(rule, { [weak self] message in self?.signal(message) }) {
                subscriptions.append(subscription)
            }
        }
        owner.onChange = { [weak self] _ in self?.ownerChanged() }
    }

    deinit {
        if let retryTimer { connection.loop.cancel(retryTimer) }
    }

    // MARK: Loading

    private func ownerChanged() {
        load?.cancel()
        load = nil
        refreshes.values.forEach { $0.cancel() }
        refreshes = [:]
        if let retryTimer { connection.loop.cancel(retryTimer) }
        retryTimer = nil
        failedLoads = 0
        table.clear()
        if owner.owner == nil {
            isReady = true
            onChange?()
        } else {
            isReady = false
            onChange?()
            loadObjects()
        }
    }

    private func loadObjects() {
        guard let owner = owner.owner,
            let call = try? Message.methodCall(
                destination: owner, path: path, interface: Self.objectManager,
                member: "GetManagedObjects")
        else { return }
        load = connection.call(call, timeoutMilliseconds: callTimeoutMilliseconds) { [weak self] result in
            guard let self else { return }
            load = nil
            switch result {
            case .success(let reply):
                guard table.load(reply) else {
                    retryLater()
                    return
                }
                failedLoads = 0
                isReady = true
                onChange?()
            case .failure:
                retryLater()
            }
        }
    }

    /// A load that failed (or answered nonsense) is tried again after 1, 2, 4 … 60 s.
    private func retryLater() {
        failedLoads += 1
        let wait = Duration.seconds(min(60, 1 << min(failedLoads - 1, 6)))
        retryTimer = connection.loop.schedule(after: wait) { [weak self] in
            guard let self else { return }
            retryTimer = nil
            loadObjects()
        }
    }

    // MARK: Signals

    private func signal(_ message: Message) {
        // Only the current owner speaks for the service; nothing counts before it is loaded.
        guard let owner = owner.owner, message.sender == owner, isReady else { return }
        switch table.apply(message) {
        case .unchanged: return
        case .changed: break
        case .refresh(let objectPath, let interface): refresh(objectPath, interface)
        }
        onChange?()
    }

    /// Properties invalidated without a value: fetch the interface's again.
    private func refresh(_ objectPath: String, _ interface: String) {
        let key = objectPath + "\u{0}" + interface
        guard refreshes[key] == nil, let owner = owner.owner,
            let call = try? Message.methodCall(
                destination: owner, path: objectPath, interface: Self.properties,
                member: "GetAll"),
            (try? call.append([.string(interface)])) != nil
        else { return }
        refreshes[key] = connection.call(call, timeoutMilliseconds: callTimeoutMilliseconds) { [weak self] result in
            guard let self else { return }
            refreshes[key] = nil
            guard case .success(let reply) = result, table.refreshed(reply, path: objectPath, interface: interface)
            else { return }
            onChange?()
        }
    }
}
