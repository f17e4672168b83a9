import DBusKit
import EventLoop

/// Follows ModemManager's modems and NetworkManager's devices on the system bus
/// (DBUS_SYSTEM_BUS_ADDRESS honoured, whatever bus the daemon serves) and
/// publishes the LinkFactsTable they add up to. Signals only: while nothing
/// changes, nothing here wakes up.
public final class LinkFactsWatch {
    public private(set) var table = LinkFactsTable()
    /// After every change of `table`.
    public var onChange: ((LinkFactsTable) -> Void)?
    /// Once both services' objects are loaded or known to be absent.
    public var onReady: (() -> Void)?
    /// A line per service appearing, leaving or loaded, for the log.
    public var onNews: ((String) -> Void)?

    private let connection: BusConnection
    /// nil once the system bus is lost: nothing is followed any more.
    private var modems: RemoteObjectManager?
    private var devices: RemoteObjectManager?
    private var wasReady = false
    private var described: [String: String] = [:]

    public static let modemManager = "org.freedesktop.ModemManager1"
    public static let networkManager = "org.freedesktop.NetworkManager"
    /// Replies and signals from these services are small; anything larger is refused by libdbus.
    static let largestMessage = 4 * 1024 * 1024

    /// Connects to the system bus (blocking, like the daemon's own connection, so at start-up only).
    public init(loop: MainLoop, bus: BusAddress = .system) throws(DBusError) {
        connection = try BusConnection(bus, loop: loop)
        connection.limitIncomingMessages(toBytes: Self.largestMessage)
        let modems = RemoteObjectManager(connection: connection, service: Self.modemManager,
                                         path: "/org/freedesktop/ModemManager1", interfaces: [LinkFactsTable.modemInterface],
                                         objectLimit: 256)
        let devices = RemoteObjectManager(connection: connection, service: Self.networkManager, path: "/org/freedesktop",
                                          interfaces: [LinkFactsTable.deviceInterface], objectLimit: 1024)
        modems.onChange = { [unowned self] in update() }
        devices.onChange = { [unowned self] in update() }
        self.modems = modems
        self.devices = devices
        connection.onDisconnected = { [unowned self] in
            onNews?("lost the system bus: modems and metered links are no longer followed")
            // Not from inside libdbus's dispatch of the Disconnected message.
            connection.loop.atEndOfTurn { [weak self] in
                guard let self else { return }
                self.modems = nil
                self.devices = nil
                connection.close()
                table = LinkFactsTable()
                onChange?(table)
            }
        }
    }

    public var isReady: Bool { modems?.isReady == true && devices?.isReady == true }

    private func update() {
        guard let modems, let devices else { return }
        describe("ModemManager", modems, noun: "modem")
        describe("NetworkManager", devices, noun: "device")
        let new = LinkFactsTable(modems: modems.objects.values, devices: devices.objects.values)
        if new != table {
            table = new
            onChange?(table)
        }
        if isReady && !wasReady {
            wasReady = true
            onReady?()
        }
    }

    private func describe(_ service: String, _ manager: RemoteObjectManager, noun: String) {
        guard manager.isReady else { return }
        let count = manager.objects.count
        let text = "\(service): " + (!manager.hasOwner ? "not running"
                                     : "\(count) \(noun)\(count == 1 ? "" : "s")")
        guard described[service] != text else { return }
        described[service] = text
        onNews?(text)
    }
}
