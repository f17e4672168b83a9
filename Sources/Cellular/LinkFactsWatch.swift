import DBusKit
import EventLoop
import MonitorRules
import Timekeeping

/// Follows ModemManager's modems and NetworkManager's devices on the system bus
/// (DBUS_SYSTEM_BUS_ADDRESS honoured, whatever bus the daemon serves) and
/// publishes the LinkFactsTable they add up to. Signals only: while nothing
/// changes, nothing here wakes up.
///
/// The connection is its own and is opened without blocking the loop. When it is
/// lost, or the bus cannot be reached, the facts are dropped and it is tried again
/// after 1, 2, 4 … 60 s; once back, everything is loaded again. Nothing another
/// peer sends can cut it: no message the bus forwards is over libdbus's limit here.
public final class LinkFactsWatch {
    public private(set) var table = LinkFactsTable()
    /// After every change of `table`.
    public var onChange: ((LinkFactsTable) -> Void)?
    /// Once both services' objects are loaded or known to be absent (the first time).
    public var onReady: (() -> Void)?
    /// A line per service appearing, leaving or loaded, and per loss or return of the bus, for the log.
    public var onNews: ((String) -> Void)?
    /// logind's PrepareForSleep: true before the machine sleeps, false once it woke (or nobody is left to say so).
    public var onSleep: ((Bool) -> Void)?
    /// Whether logind last said the machine is going to sleep.
    public var asleep: Bool { sleep?.asleep ?? false }

    private let loop: MainLoop
    private let bus: BusAddress
    private var connection: BusConnection?
    private var modems: RemoteObjectManager?
    private var devices: RemoteObjectManager?
    private var sleep: SleepFollower?
    /// Whether systemd-resolved is on the bus (DNS truth asks it then).
    private var resolved: NameOwnerWatch?
    private var wasReady = false
    private var described: [String: String] = [:]
    private var failedAttempts = 0
    private var retryTimer: LoopTimer?
    /// Whether the bus was reachable at the last attempt (only changes are logged).
    private var reachable: Bool?

    public static let modemManager = "org.freedesktop.ModemManager1"
    public static let networkManager = "org.freedesktop.NetworkManager"
    public static let resolve1 = "org.freedesktop.resolve1"

    /// The system bus, while it is connected and this watch is registered on it.
    public var systemBus: BusConnection? { reachable == true ? connection : nil }
    /// systemd-resolved's unique name on the system bus; nil while it is not there (or not known yet).
    public var resolvedOwner: String? { resolved?.owner }
    /// D-Bus's own limit on a message: nothing the bus forwards is larger, so no peer's
    /// oversized signal to this connection makes libdbus drop it.
    static let largestMessage = 128 * 1024 * 1024

    public init(loop: MainLoop, bus: BusAddress = .system) {
        self.loop = loop
        self.bus = bus
    }

    deinit {
        if let retryTimer { loop.cancel(retryTimer) }
        resolved = nil
        modems = nil
        devices = nil
        sleep = nil
        connection?.close()
    }

    /// Connects (without waiting); call once the callbacks are set.
    public func start() {
        guard connection == nil, retryTimer == nil else { return }
        connect()
    }

    public var isReady: Bool { modems?.isReady == true && devices?.isReady == true }

    /// This watch's name on the system bus ("" while not connected): for tests.
    public var uniqueName: String { connection?.uniqueName ?? "" }

    private func connect() {
        let opened: BusConnection
        do {
            opened = try BusConnection.connect(bus, loop: loop) { [weak self] error in self?.registered(error) }
        } catch {
            return unreachable(error.message)
        }
        opened.limitIncomingMessages(toBytes: Self.largestMessage)
        opened.onDisconnected = { [weak self] in
            // Not from inside libdbus's dispatch of the Disconnected message.
            self?.loop.atEndOfTurn { [weak self] in self?.lost() }
        }
        connection = opened
    }

    private func registered(_ error: DBusError?) {
        guard let connection else { return }
        if let error { return unreachable(error.message) }
        failedAttempts = 0
        if reachable == false { onNews?("system bus reached again: following ModemManager and NetworkManager") }
        reachable = true
        let modems = RemoteObjectManager(
            connection: connection, service: Self.modemManager,
            path: "/org/freedesktop/ModemManager1", interfaces: [LinkFactsTable.modemInterface],
            objectLimit: 256)
        let devices = RemoteObjectManager(
            connection: connection, service: Self.networkManager, path: "/org/freedesktop",
            interfaces: [LinkFactsTable.deviceInterface, LinkFactsTable.dhcp4Interface], objectLimit: 1024)
        modems.onChange = { [unowned self] in update() }
        devices.onChange = { [unowned self] in update() }
        self.modems = modems
        self.devices = devices
        resolved = NameOwnerWatch(connection: connection, name: Self.resolve1)
        sleep = SleepFollower(connection: connection) { [weak self] asleep in
            self?.onNews?(asleep ? "logind: the machine is going to sleep" : "logind: the machine woke")
            self?.onSleep?(asleep)
        }
    }

    /// The bus went away: the facts go with it until it is back.
    private func lost() {
        guard connection != nil else { return }
        onNews?("lost the system bus: modems and metered links are no longer followed (trying again)")
        reachable = false
        dropConnection()
        scheduleRetry()
    }

    private func unreachable(_ why: String) {
        if reachable != false {
            onNews?("cannot reach the system bus (\(why)): modems and metered links are not followed until it is back")
        }
        reachable = false
        dropConnection()
        scheduleRetry()
    }

    private func dropConnection() {
        resolved = nil
        modems = nil
        devices = nil
        sleep?.drop()
        sleep = nil
        connection?.onDisconnected = nil
        connection?.close()
        connection = nil
        described = [:]
        if table != LinkFactsTable() {
            table = LinkFactsTable()
            onChange?(table)
        }
    }

    /// 1, 2, 4 … 60 s between failed attempts.
    private func scheduleRetry() {
        guard retryTimer == nil else { return }
        failedAttempts += 1
        let wait = Duration.seconds(min(60, 1 << min(failedAttempts - 1, 6)))
        retryTimer = loop.schedule(after: wait) { [weak self] in
            guard let self else { return }
            retryTimer = nil
            connect()
        }
    }

    private func update() {
        guard let modems, let devices else { return }
        describe("ModemManager", modems, noun: "modem", interface: LinkFactsTable.modemInterface)
        describe("NetworkManager", devices, noun: "device", interface: LinkFactsTable.deviceInterface)
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

    private func describe(_ service: String, _ manager: RemoteObjectManager, noun: String, interface: String) {
        guard manager.isReady else { return }
        let count = manager.objects.values.filter { $0.interfaces[interface] != nil }.count
        let text =
            "\(service): "
            + (!manager.hasOwner
                ? "not running"
                : "\(count) \(noun)\(count == 1 ? "" : "s")")
        guard described[service] != text else { return }
        described[service] = text
        onNews?(text)
    }
}
