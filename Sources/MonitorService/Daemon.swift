import CLinux
import Cellular
import DBusKit
import DaemonWorlds
import EventLoop
import Glibc
import HTTPCheck
import HelperProcess
import MonitorContract
import MonitorRules
import Probe
import ProbeRules
import Reachability
import ServiceLog
import Timekeeping
import TrafficCensus

/// netobserverd: the bus connection, the Monitor object and the loop.
public enum Daemon {
    /// Runs the daemon with `arguments` (without the program name); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        if arguments == [BlockingHelper.argument] { return BlockingHelperProcess.run() }
        do throws(StartFailure) {
            guard let options = try parse(arguments) else { return 0 }
            let account = try lookUpAccount(options)
            configureProcess(options)
            let service = try Service(options: options)
            try service.dropPrivileges(account)
            service.restoreSettings()
            try service.export()
            try service.claimName()
            return service.run()
        } catch {
            Log.error("netobserverd: \(error.message)")
            return error.status
        }
    }

    /// Why start-up stopped, and the exit status that says so.
    struct StartFailure: Error {
        let status: Int32
        let message: String
    }

    /// The options to run with; nil after --help or --version.
    private static func parse(_ arguments: [String]) throws(StartFailure) -> DaemonOptions? {
        do {
            switch try DaemonOptions.parse(arguments) {
            case .help:
                print(DaemonOptions.usage)
                return nil
            case .version:
                print("netobserverd \(DaemonOptions.version)")
                return nil
            case .run(let parsed):
                return parsed
            }
        } catch {
            throw StartFailure(status: 2, message: error.message)
        }
    }

    typealias Account = (name: String, uid: uid_t, gid: gid_t)

    private static func lookUpAccount(_ options: DaemonOptions) throws(StartFailure) -> Account? {
        guard let user = options.user else { return nil }
        guard let entry = getpwnam(user) else {
            throw StartFailure(status: 2, message: "--user: no user named '\(user)'")
        }
        guard geteuid() == 0 else { throw StartFailure(status: 2, message: "--user needs to be started as root") }
        return (user, entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    private static func configureProcess(_ options: DaemonOptions) {
        Log.verbose = options.verbose
        signal(SIGPIPE, SIG_IGN)
        // Fixed, so glibc does not raise them after the first large free: a huge
        // message's buffers then go back to the system instead of staying in the heap.
        _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        _ = mallopt(M_TRIM_THRESHOLD, 256 * 1024)
        // GnuTLS, which libcurl brings along when a CheckURL loads it, initialises itself on
        // loading unless told not to, and nothing here uses it. The daemon starts no thread (its lookups
        // are the blocking helper's), so setenv is safe here.
        setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 0)
    }
}

/// The running service: every part, and the steps that start, serve and stop it.
final class Service {
    private let options: DaemonOptions
    private let loop: MainLoop
    private let connection: BusConnection
    /// Lookups, census walks and files: the daemon's blocking work, in a process of its own.
    private let helper: BlockingHelper
    /// DNS truth's interception answers, shared by the targets on one network.
    private let interceptions: InterceptionBook
    /// DNS truth's questions: the helper's, or resolved's over the system bus.
    private var systemResolver: SystemResolver?
    /// One resolver for every target.
    private let resolver: HostResolver
    /// One ICMP socket per family for every target.
    private let probeSockets: ProbeSockets
    /// One libcurl multi handle for every target's CheckURL, made on the first check.
    private let http: LazyHTTPClient
    /// The kernel's links, addresses and routes, watched for every target; nil when rtnetlink cannot be opened.
    private let routes: ReachabilityEngine?
    /// Samples this machine's TCP connections for every target; nil when sock_diag cannot be opened.
    private let trafficSampler: TrafficSampler?
    /// The pending Waits and Checks of every target together.
    private let budget: PendingBudget
    /// ModemManager and NetworkManager on the system bus (followed again whenever it comes back).
    private var linkFacts: LinkFactsWatch?
    /// The service's own work above the targets: portal APIs, link facts, sleeps, the histories' ticks.
    private var serviceWorld: DaemonServiceWorld?
    private var targets: TargetSet?
    private var saver: StateSaver?
    /// Every target's history (outages, TimeInState) and the sleeps.
    private var history: HistoryBook?
    /// Where the settings and histories are kept; nil: nowhere (nothing persists).
    private var stateDirectory: String?
    /// What the state file held at start: every target is made from it (the default one with the flags first).
    private var restoredState = StoredState()
    /// The default target's settings (the flags' until it exists).
    private var settings: MonitorSettings { targets?.defaultTarget?.model.settings ?? options.settings }

    typealias StartFailure = Daemon.StartFailure

    /// Opens everything that needs root: the loop, the bus connection, the netlink socket.
    init(options: DaemonOptions) throws(StartFailure) {
        self.options = options
        do {
            loop = try MainLoop()
        } catch {
            throw StartFailure(status: 1, message: "\(error)")
        }
        loop.onSlowTurn = { took in Log.warning("one loop turn took \(took.milliseconds) ms") }
        if loop.waitCall == .epollPwait {
            Log.info("epoll_pwait2 is missing or forbidden here: waiting with epoll_pwait")
        }
        do {
            connection = try BusConnection(options.bus, loop: loop)
        } catch {
            throw StartFailure(status: 1, message: "cannot connect to the bus: \(error.message)")
        }
        interceptions = InterceptionBook(loop: loop)
        budget = PendingBudget(identify: PendingBudget.askingBus(connection))
        do {
            let helper = BlockingHelper(loop: loop)
            helper.onWarning = { Log.warning($0) }
            self.helper = helper
            resolver = try HostResolver(loop: loop) { [unowned helper] host, family, first, answer in
                helper.resolve(host, family: family, first: first, completion: answer)
            }
            probeSockets = ProbeSockets(loop: loop)
            http = LazyHTTPClient(loop: loop)
            do {
                trafficSampler = try TrafficSampler(loop: loop, log: { Log.warning($0) }) {
                    [unowned helper] host, route, sources, now, answer in
                    helper.sample(host: host, route: route, sources: sources, now: now, completion: answer)
                }
            } catch {
                trafficSampler = nil
                Log.warning("cannot read this machine's TCP connections (Traffic stays idle): \(error)")
            }
            // One route watch for every target, the default one as the others (each a watch of its own on it).
            do {
                routes = try ReachabilityEngine(loop: loop)
                routes?.onIgnoredRouterOption = { Log.warning("router advertisement: \($0)") }
            } catch {
                routes = nil
                Log.warning("cannot watch the kernel's routes: \(error)")
            }
        } catch {
            throw StartFailure(status: 1, message: "cannot start the engines: \(error)")
        }
        do {
            // Blocked for the signalfd; the blocking helper starts with every signal at its default but the stops, which it ignores.
            try loop.handleSignals([SIGTERM, SIGINT, SIGHUP]) { [unowned self] signal in
                if signal == SIGHUP {
                    reloadSettings()
                } else {
                    Log.info("signal \(signal): stopping")
                    loop.quit(status: 0)
                }
            }
        } catch {
            throw StartFailure(status: 1, message: "\(error)")
        }
        connection.onDisconnected = { [loop] in
            Log.error("lost the connection to the bus")
            loop.quit(status: 1)
        }
        linkFacts = LinkFactsWatch(loop: loop)
        systemResolver = SystemResolver(
            loop: loop, helper: helper, systemBus: { [unowned self] in linkFacts?.systemBus },
            resolvedOwner: { [unowned self] in linkFacts?.resolvedOwner })
    }

    deinit {
        // Everything below holds the loop unowned or is attached to it: take them
        // apart while it still exists.
        connection.close()
        history = nil
        linkFacts = nil
        serviceWorld = nil
        saver = nil
        targets = nil
    }

    /// With --user: the bus connection and the netlink socket are open; ICMP sockets
    /// open later, which raw ones may still do with CAP_NET_RAW. No other thread exists yet.
    func dropPrivileges(_ account: Daemon.Account?) throws(StartFailure) {
        guard let account else { return }
        guard CLinux_drop_privileges(account.uid, account.gid) == 0 else {
            throw StartFailure(status: 1, message: "--user \(account.name): \(SystemError("dropping privileges"))")
        }
        Log.info("running as \(account.name) (uid \(account.uid)) with only CAP_NET_RAW")
    }

    /// Reads the state file (as the user the service runs as) and applies what
    /// no flag overrides, before anything is exported or announced.
    func restoreSettings() {
        guard let directory = options.stateDirectory ?? options.defaultStateDirectory() else { return }
        stateDirectory = directory
        let store = StateStore(directory: directory)
        var (state, problems, refused) = store.loaded(
            AtomicFile(directory: directory, name: StateStore.fileName)
                .read(maximumSize: StateStore.maximumSize))
        problems.forEach { Log.warning($0) }
        var unreadable: SystemError?
        if let refused {
            let (line, moved) = store.setAside(refused)
            Log.warning(line + "; starting from the defaults")
            if !moved { unreadable = store.unreadable }
        }
        // Numbers are never reused, even when the file that counted them was lost: no target inherits a history.
        state.nextTarget = max(state.nextTarget, store.highestNumberOnDisk() + 1)
        restoredState = state
        saver = StateSaver(store: store, helper: helper)
        saver?.refusing = unreadable
    }

    /// Exports the targets' objects, each with its engines, and connects them to the bus.
    func export() throws(StartFailure) {
        let server = ObjectServer(connection: connection)
        // The default target starts first: its first lookup is asked before any added target's.
        let history = HistoryBook(directory: stateDirectory, helper: helper)
        self.history = history
        let objects: ServiceObjects
        do {
            objects = try ServiceObjects(
                server: server, settings: options.settings, budget: budget, state: restoredState,
                flagged: options.flagged, history: history
            ) {
                [
                    loop, resolver, probeSockets, http, options, routes,
                    trafficSampler, systemResolver, interceptions
                ] model, lookupsFirst throws(SystemError) in
                try ConnectivityMonitor(
                    loop: loop, model: model, resolver: resolver, sharedReachability: routes,
                    probeSockets: probeSockets, http: http, caFile: options.caFile,
                    dnsRefresh: options.dnsRefresh, resolvesFirst: lookupsFirst,
                    trafficSampler: trafficSampler, dnsAsking: systemResolver, interceptions: interceptions)
            }
        } catch {
            throw StartFailure(status: 1, message: error.message)
        }
        let targets = objects.targets
        self.targets = targets
        let path = saver?.store.path ?? "state"
        objects.restoreProblems.forEach { Log.warning("\(path): \($0)") }
        exportTargets(targets)
        let fetcher = PortalAPIFetcher(loop: loop, resolver: resolver, http: http, caFile: options.caFile)
        fetcher.isThisMachine = { [unowned self] address in routes?.table.isLocal(address) ?? false }
        let serviceWorld = DaemonServiceWorld(loop: loop, fetcher: fetcher, history: history, targets: targets)
        self.serviceWorld = serviceWorld
        let service = serviceWorld.driver
        linkFacts?.onChange = { [unowned service] table in service.handle(.servicesSaid(table)) }
        routes?.onLinksChanged = { [unowned service] names in service.handle(.kernelLinks(names)) }
        if let names = routes?.linkNames, !names.isEmpty { service.handle(.kernelLinks(names)) }
        routes?.onPortalAPIsChanged = { [unowned service] uris in service.handle(.routersAnnounced(uris)) }
        if let uris = routes?.portalAPIs, !uris.isEmpty { service.handle(.routersAnnounced(uris)) }
        routes?.onNat64PrefixesChanged = { [unowned service] prefixes in
            service.handle(.routersAdvertised(nat64Prefixes: prefixes))
        }
        if let prefixes = routes?.nat64Prefixes, !prefixes.isEmpty {
            service.handle(.routersAdvertised(nat64Prefixes: prefixes))
        }
        linkFacts?.onNews = { Log.info($0) }
        linkFacts?.onSleep = { [unowned service] asleep in service.handle(.sleepAnnounced(asleep)) }
        linkFacts?.onReady = { [unowned service] in
            Log.info("modems and metered links: first view complete")
            service.handle(.servicesReady)
        }
        linkFacts?.start()
        // The first verdicts wait for the services' first answers, at most ServiceCore.servicesWait.
        if let linkFacts { service.handle(.servicesFollowed(ready: linkFacts.isReady)) }
        connection.onSignal = { [unowned self] message in busSignal(message) }
        // Learn of clients leaving the bus, to drop their pending calls.
        connection.addMatch(
            "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''")
    }

    /// The added targets: those the state file kept, then those of --target.
    private func exportTargets(_ targets: TargetSet) {
        for host in options.targets {
            var settings = MonitorSettings()
            settings.host = host
            do {
                try targets.add(settings: settings, fromCommandLine: true, persisted: [:])
            } catch {
                Log.warning("--target \(host): \(error.message)")
            }
        }
        targets.persist = { [unowned self] target, key, call in save(answering: call, key: key) }
        targets.onChange = { [unowned self] in save(answering: nil, key: nil) }
        // After this turn's signals are out (the flush was queued first).
        targets.onStatusChanged = { [loop] target, state in
            loop.atEndOfTurn {
                let detail = state.status.isConnected ? "via \(state.interface), \(state.address)" : state.reason
                Log.notice(
                    "\(Self.name(target))status \(state.status.rawValue) for \(target.model.settings.host): \(detail)")
            }
        }
        targets.onSettingChanged = { [loop] target, key in
            let value = target.model.settings.text(key)
            loop.atEndOfTurn { Log.info("\(Self.name(target))\(key.name) set to \(value)") }
        }
    }

    /// How the log names a target: not at all for the default one.
    private static func name(_ target: TargetSet.Target) -> String {
        target.number == 0 ? "" : "target \(target.number): "
    }

    /// Everything the state file keeps: every target's values (the default one's as 0) and the next number.
    private var storedState: StoredState {
        StoredState(
            targets: targets?.stored ?? restoredState.targets,
            nextTarget: targets?.nextNumber ?? restoredState.nextTarget)
    }

    /// Saves the whole state after this turn's signals; `call` (a Set of `key`) is answered
    /// once it is on disk.
    @discardableResult
    private func save(answering call: MethodCall?, key: MonitorSettings.Key?) -> MethodOutcome {
        guard let saver else { return .reply([]) }
        let path = saver.store.path
        // After this turn's signals, like the rest of the work a Set causes.
        loop.atEndOfTurn { [unowned self] in
            saver.save(storedState) { error in
                guard let error else {
                    call?.reply([])
                    return
                }
                Log.warning("cannot save settings in \(path): \(error)")
                let what = key?.name ?? "The targets"
                call?.fail(
                    .failed("\(what) is in effect until the service stops, but could not be saved in \(path): \(error)")
                )
            }
        }
        return call == nil ? .reply([]) : .later
    }

    /// SIGHUP: the file again, as at start-up, after any write still under way.
    private func reloadSettings() {
        guard let saver else {
            Log.notice("SIGHUP: no state file to re-read")
            return
        }
        saver.reload { [unowned self] state, problems, refused in
            problems.forEach { Log.warning($0) }
            // A file that cannot be read is not an empty one: the running state stays, and is saved afresh.
            if let refused {
                let (line, moved) = saver.store.setAside(refused)
                Log.warning("SIGHUP: " + line + "; the running settings stay" + (moved ? " and are saved again" : ""))
                guard moved else {
                    saver.refusing = saver.store.unreadable
                    return
                }
                saver.save(storedState) { error in
                    if let error { Log.warning("cannot save settings in \(saver.store.path): \(error)") }
                }
                return
            }
            guard let (names, ignored) = targets?.reload(state) else { return }
            ignored.forEach { Log.warning("\(saver.store.path): \($0)") }
            Log.notice(
                "SIGHUP: re-read \(saver.store.path): \(names.isEmpty ? "nothing changed" : names.joined(separator: ", "))"
            )
        }
    }

    private func busSignal(_ message: Message) {
        guard message.sender == "org.freedesktop.DBus" else { return }
        if message.isSignal(interface: "org.freedesktop.DBus", member: "NameOwnerChanged"),
            let arguments = try? message.arguments(), arguments.count == 3,
            let name = arguments[0].stringValue, arguments[2].stringValue == "", name.hasPrefix(":")
        {
            targets?.clientVanished(name)
            budget.clientVanished(name)
        } else if message.isSignal(interface: "org.freedesktop.DBus", member: "NameLost"),
            (try? message.arguments())?.first?.stringValue == MonitorContract.busName
        {
            Log.notice("another instance took over \(MonitorContract.busName): exiting")
            loop.quit(status: 0)
        }
    }

    func claimName() throws(StartFailure) {
        let result: NameRequestResult
        do {
            result = try connection.requestName(
                MonitorContract.busName, allowReplacement: true, replaceExisting: options.replace)
        } catch {
            throw StartFailure(status: 1, message: "cannot request \(MonitorContract.busName): \(error.message)")
        }
        guard result == .primaryOwner || result == .alreadyOwner else {
            throw StartFailure(
                status: 1,
                message:
                    "\(MonitorContract.busName) is already owned by another instance (use --replace to take it over)")
        }
        Log.info(
            "serving \(MonitorContract.busName) at \(MonitorContract.objectPath) as \(connection.uniqueName), host \(settings.host)"
        )
    }

    static let startUpTrims: [Duration] = [.milliseconds(200), .seconds(3)]

    /// Serves until a signal or a lost bus; returns the exit status.
    func run() -> Int32 {
        let notifier = SystemdNotifier()
        notifier?.notify("READY=1\nSTATUS=serving \(MonitorContract.busName)")
        if let notifier, let period = notifier.watchdogPeriod {
            // The loop itself answers the watchdog: a stuck loop stops the keep-alives. They ride on the loop's own
            // wake-ups, and are still sent at least once per half of WatchdogSec.
            loop.schedule(after: period / 2, leeway: period / 2, repeats: true) { notifier.notify("WATCHDOG=1") }
        }
        // What only start-up used is let go, once serving starts and again once the first verdicts are in: code,
        // constants and symbol tables mapped 64 KiB at a time were most of the resident set (the static Swift
        // runtime's above all). What is used again comes back from the file, a page at a time where the kernel allows.
        _ = CLinux_prepare_single_page_faults()
        for delay in Self.startUpTrims {
            loop.schedule(after: delay) { _ = CLinux_drop_clean_file_pages() }
        }
        let status = loop.run()
        notifier?.notify("STOPPING=1")
        if connection.isConnected {
            connection.callBus("ReleaseName", [.string(MonitorContract.busName)])
            connection.flush()
        }
        connection.close()
        saver?.finish()
        history?.flush()
        return status
    }
}
