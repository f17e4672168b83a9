import CLinux
import DBusKit
import EventLoop
import Glibc

/// netobserverd: the bus connection, the Monitor object and the loop.
public enum Daemon {
    /// Runs the daemon with `arguments` (without the program name); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        let options: DaemonOptions
        do {
            switch try DaemonOptions.parse(arguments) {
            case .help:
                print(DaemonOptions.usage)
                return 0
            case .version:
                print("netobserverd \(DaemonOptions.version)")
                return 0
            case .run(let parsed):
                options = parsed
            }
        } catch {
            Log.error("netobserverd: \(error.message)")
            return 2
        }
        var account: (uid: uid_t, gid: gid_t)?
        if let user = options.user {
            guard let entry = getpwnam(user) else {
                Log.error("netobserverd: --user: no user named '\(user)'")
                return 2
            }
            guard geteuid() == 0 else {
                Log.error("netobserverd: --user needs to be started as root")
                return 2
            }
            account = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        Log.verbose = options.verbose
        signal(SIGPIPE, SIG_IGN)
        // Fixed, so glibc does not raise them after the first large free: a huge
        // message's buffers then go back to the system instead of staying in the heap.
        _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        _ = mallopt(M_TRIM_THRESHOLD, 256 * 1024)

        let loop: MainLoop
        do {
            loop = try MainLoop()
            loop.onSlowTurn = { nanoseconds in Log.warning("one loop turn took \(nanoseconds / 1_000_000) ms") }
            // Before any thread exists, so all of them inherit the blocked mask.
            try loop.handleSignals([SIGTERM, SIGINT]) { signal in
                Log.info("signal \(signal): stopping")
                loop.quit(status: 0)
            }
        } catch {
            Log.error("netobserverd: \(error)")
            return 1
        }

        let store = (options.stateDirectory ?? options.defaultStateDirectory()).map(StateStore.init(directory:))
        var persisted: [MonitorSettings.Key: String] = [:]
        var settings = options.settings
        if let store {
            let (values, problems) = store.load()
            problems.forEach { Log.warning($0) }
            for (key, text) in values {
                do {
                    var candidate = settings
                    try candidate.set(key, text: text)
                    persisted[key] = text
                    if !options.flagged.contains(key) { settings = candidate }
                } catch {
                    Log.warning("\(store.path): \(error.message), ignored")
                }
            }
        }

        let connection: BusConnection
        do {
            connection = try BusConnection(options.bus, loop: loop)
        } catch {
            Log.error("netobserverd: cannot connect to the bus: \(error.message)")
            return 1
        }
        connection.onDisconnected = {
            Log.error("lost the connection to the bus")
            loop.quit(status: 1)
        }

        let model = MonitorModel(settings: settings)
        let server = ObjectServer(connection: connection)
        let monitor = MonitorObject(model: model, server: server)
        let connectivity: ConnectivityMonitor
        do {
            connectivity = try ConnectivityMonitor(loop: loop, model: model)
        } catch {
            Log.error("netobserverd: cannot start the engines: \(error)")
            return 1
        }
        connectivity.onVerdictReady = { monitor.verdictReady() }
        if let account, let user = options.user {
            // The bus connection and the netlink socket are open; ICMP sockets open later,
            // which raw ones may still do with CAP_NET_RAW. No other thread exists yet.
            guard CLinux_drop_privileges(account.uid, account.gid) == 0 else {
                Log.error("netobserverd: --user \(user): \(SystemError("dropping privileges"))")
                return 1
            }
            Log.info("running as \(user) (uid \(account.uid)) with only CAP_NET_RAW")
        }
        monitor.onStatusChanged = { state, host in
            let detail = state.status.isConnected ? "via \(state.interface), \(state.address)" : state.reason
            Log.notice("status \(state.status.rawValue) for \(host): \(detail)")
        }
        let saver = store.flatMap { store in try? StateSaver(store: store) { Log.warning($0) } }
        // Sets are written out together, 250 ms after the first of a burst, and at exit.
        var saveTimer: LoopTimer?
        model.onSettingChanged = { key in
            Log.info("\(key.rawValue) set to \(model.settings.text(key))")
            connectivity.settingChanged(key)
            guard let saver else { return }
            persisted[key] = model.settings.text(key)
            guard saveTimer == nil else { return }
            saveTimer = loop.schedule(after: 250_000_000) {
                saveTimer = nil
                saver.save(persisted)
            }
        }
        connection.onSignal = { message in
            guard message.sender == "org.freedesktop.DBus" else { return }
            if message.isSignal(interface: "org.freedesktop.DBus", member: "NameOwnerChanged"),
               let arguments = try? message.arguments(), arguments.count == 3,
               let name = arguments[0].stringValue, arguments[2].stringValue == "", name.hasPrefix(":") {
                monitor.clientVanished(name)
            } else if message.isSignal(interface: "org.freedesktop.DBus", member: "NameLost"),
                      (try? message.arguments())?.first?.stringValue == MonitorInterface.busName {
                Log.notice("another instance took over \(MonitorInterface.busName): exiting")
                loop.quit(status: 0)
            }
        }
        // Learn of clients leaving the bus, to drop their pending calls.
        connection.addMatch("type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                            + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''")

        do {
            switch try connection.requestName(MonitorInterface.busName, allowReplacement: true, replaceExisting: options.replace) {
            case .primaryOwner, .alreadyOwner:
                break
            case .exists, .inQueue:
                Log.error("netobserverd: \(MonitorInterface.busName) is already owned by another instance (use --replace to take it over)")
                return 1
            }
        } catch {
            Log.error("netobserverd: cannot request \(MonitorInterface.busName): \(error.message)")
            return 1
        }
        Log.info("serving \(MonitorInterface.busName) at \(MonitorInterface.objectPath) as \(connection.uniqueName), host \(model.settings.host)")
        connectivity.start()
        let notifier = SystemdNotifier()
        notifier?.notify("READY=1\nSTATUS=serving \(MonitorInterface.busName)")
        if let notifier, let period = notifier.watchdogPeriod {
            // The loop itself answers the watchdog: a stuck loop stops the keep-alives.
            loop.schedule(after: period, repeats: true) { notifier.notify("WATCHDOG=1") }
        }

        let status = loop.run()
        notifier?.notify("STOPPING=1")
        if connection.isConnected {
            connection.callBus("ReleaseName", [.string(MonitorInterface.busName)])
            connection.flush()
        }
        connection.close()
        if let timer = saveTimer {
            loop.cancel(timer)
            saver?.save(persisted)
        }
        saver?.finish()
        _ = (monitor, connectivity)
        return status
    }
}
