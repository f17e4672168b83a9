import Cellular
import DBusKit
import DaemonWorlds
import EventLoop
import HTTPCheck
import MonitorContract
import MonitorRules
import Probe
import ProbeRules
import Reachability
import ReachabilityRules
import Timekeeping

/// Every target: the default one, number 0 at `/org/netobserver/Monitor`, and the added ones,
/// each a complete org.netobserver.Monitor at `…/Monitor/N` with its own settings and state,
/// all sharing the resolver, the sockets and the pending-call budget, all made by `add` and
/// wired one way (`wire`). What sets the default apart is said where it is used: its path, the
/// interfaces its object carries besides, its lookups going first (an attribute), and that it
/// cannot be removed (a check in `remove`). Numbers are never reused, across restarts too.
final class TargetSet: ServiceTargets {
    final class Target {
        let number: UInt32
        let model: MonitorModel
        let object: MonitorObject
        /// nil where the set runs without engines (the fuzzer).
        let connectivity: ConnectivityMonitor?
        /// From --target: neither it nor what is Set on it is kept in the state file.
        let fromCommandLine: Bool
        /// Its lookups go before every other target's (the default target's: INTERFACE.md, "Lookups never wait").
        let lookupsFirst: Bool
        /// The settings the command line gave it: the state file's values never take their place.
        let flagged: Set<MonitorSettings.Key>
        /// The values Set over D-Bus on it (kept in the state file unless from the command line).
        var persisted: [MonitorSettings.Key: String]

        init(
            number: UInt32, model: MonitorModel, object: MonitorObject, connectivity: ConnectivityMonitor?,
            fromCommandLine: Bool, lookupsFirst: Bool, flagged: Set<MonitorSettings.Key>,
            persisted: [MonitorSettings.Key: String]
        ) {
            self.number = number
            self.model = model
            self.object = object
            self.connectivity = connectivity
            self.fromCommandLine = fromCommandLine
            self.lookupsFirst = lookupsFirst
            self.flagged = flagged
            self.persisted = persisted
        }
    }

    /// Makes a target's engines (sharing the resolver, the route watch, the ICMP sockets and
    /// libcurl with every other target), its lookups first or not; nil: targets are objects
    /// without engines (the fuzzer).
    typealias EngineFactory = (_ model: MonitorModel, _ lookupsFirst: Bool) throws(SystemError) -> ConnectivityMonitor

    private let loop: MainLoop
    private let server: ObjectServer
    private let makeEngines: EngineFactory?
    private let budget: PendingBudget
    /// Every target's history and the sleeps; nil where the set runs without engines (the fuzzer).
    private let history: HistoryBook?
    /// Every target, the default one (number 0) among them, in the order of their numbers.
    private(set) var all: [Target] = []
    /// Target 0, once the service adopted it.
    var defaultTarget: Target? { all.first { $0.number == 0 } }
    /// The targets added over D-Bus, from the state file or by --target.
    var added: [Target] { all.filter { $0.number != 0 } }
    private(set) var nextNumber: UInt32 = 1
    /// What the targets told the service's core before it was there (at start-up), in order.
    private var untold: [ServiceCore.Event] = []
    /// AddTarget over D-Bus: each new target probes at once, so callers may add only so many so fast.
    private var recentAdditions = RecentEvents(limit: TargetSet.additionsPerWindow, window: TargetSet.additionWindow)
    static let additionsPerWindow = 16
    static let additionWindow = Duration.seconds(10)

    /// The set of targets changed (Targets, and what the state file keeps).
    var onChange: (() -> Void)?
    /// A value was Set on target `number` over D-Bus: keep it, and answer the Set.
    var persist: ((_ target: Target, _ key: MonitorSettings.Key, _ call: MethodCall) -> MethodOutcome)?
    /// A target's Status changed, or one of its settings (for the log).
    var onStatusChanged: ((Target, MonitorState) -> Void)?
    var onSettingChanged: ((Target, MonitorSettings.Key) -> Void)?
    /// The service's driver: its core hears each target's route verdicts, Timeout and end (`ServiceCore.Event`), and
    /// it keeps every target's one wake-up. What was told before it came is told then.
    public weak var service: ServiceDriver? {
        didSet {
            guard let service else { return }
            for target in all { adopt(target) }
            let told = untold
            untold = []
            told.forEach(service.handle)
        }
    }

    init(
        loop: MainLoop, server: ObjectServer, budget: PendingBudget, history: HistoryBook? = nil,
        makeEngines: EngineFactory?
    ) {
        self.loop = loop
        self.server = server
        self.budget = budget
        self.history = history
        self.makeEngines = makeEngines
    }

    var paths: [String] { added.map { Self.path($0.number) } }

    /// Where target `number` is exported.
    static func path(_ number: UInt32) -> String {
        number == 0 ? MonitorContract.objectPath : MonitorContract.Targets.path(number)
    }

    /// org.netobserver.Targets, for the default target's object.
    func declaration() -> DBusInterface {
        DBusInterface(
            MonitorContract.Targets.interface,
            methods: [
                DBusMethod(
                    MonitorContract.Targets.addTarget, inputs: [DBusArgument("host", .string)],
                    outputs: [DBusArgument("path", .objectPath)]
                ) { [unowned self] call throws(DBusError) in
                    guard let host = try call.arguments().first?.stringValue else {
                        throw .invalidArgs("expected a host")
                    }
                    var settings = MonitorSettings()
                    do throws(SettingError) {
                        try settings.set(.host, text: host)
                    } catch {
                        throw .invalidArgs(error.message)
                    }
                    guard recentAdditions.hasRoom(now: loop.now()) else {
                        throw .limitsExceeded(
                            "at most \(Self.additionsPerWindow) targets added in \(Self.additionWindow): try again later"
                        )
                    }
                    // Only an addition that happened counts toward the limit.
                    let target = try add(settings: settings, persisted: [.host: settings.host])
                    recentAdditions.record(now: loop.now())
                    return .reply([.objectPath(MonitorContract.Targets.path(target.number))])
                },
                DBusMethod(MonitorContract.Targets.removeTarget, inputs: [DBusArgument("path", .objectPath)]) {
                    [unowned self] call throws(DBusError) in
                    guard case .objectPath(let path)? = try call.arguments().first else {
                        throw .invalidArgs("expected an object path")
                    }
                    try remove(path: path)
                    return .reply([])
                },
            ],
            properties: [
                DBusProperty(MonitorContract.Targets.targetsProperty, .array(.objectPath)) { [unowned self] in
                    .array(.objectPath, paths.map { .objectPath($0) })
                }
            ])
    }

    /// Adds a target with `settings`: the next number, or `number` (the default's, 0, or one the
    /// state file kept); `interfaces`, what its object carries besides org.netobserver.Monitor.
    @discardableResult
    func add(
        settings: MonitorSettings, number: UInt32? = nil, lookupsFirst: Bool = false, fromCommandLine: Bool = false,
        flagged: Set<MonitorSettings.Key> = [], persisted: [MonitorSettings.Key: String],
        interfaces: [DBusInterface] = []
    ) throws(DBusError) -> Target {
        let number = number ?? nextNumber
        guard !all.contains(where: { $0.number == number }) else {
            throw .invalidArgs("target \(number) exists already")
        }
        // The limits are on the added targets: the default one is always there.
        if number != 0 {
            guard added.count < MonitorContract.Targets.limit else {
                throw .limitsExceeded("at most \(MonitorContract.Targets.limit) targets (remove one first)")
            }
            guard MonitorContract.Targets.numbers.contains(number) else {
                throw .limitsExceeded(
                    "every target number up to \(MonitorContract.Targets.numbers.upperBound) was given out already")
            }
            nextNumber = max(nextNumber, number + 1)
        }
        let model = MonitorModel(settings: settings)
        let object = MonitorObject(
            model: model, server: server, path: Self.path(number), budget: budget, extraInterfaces: interfaces)
        let connectivity: ConnectivityMonitor?
        do {
            connectivity = try makeEngines?(model, lookupsFirst)
        } catch {
            object.remove()
            throw .failed("cannot start the engines for \(settings.host): \(error)")
        }
        let target = Target(
            number: number, model: model, object: object, connectivity: connectivity,
            fromCommandLine: fromCommandLine, lookupsFirst: lookupsFirst, flagged: flagged, persisted: persisted)
        let listed = paths
        join(target)
        if paths != listed { changed() }
        return target
    }

    /// A target joins the set in the order of its number, and is wired as every target is.
    private func join(_ target: Target) {
        let index = all.firstIndex { $0.number > target.number } ?? all.endIndex
        all.insert(target, at: index)
        wire(target)
    }

    /// What every target is told and tells, the same for all: verdicts to its pending Checks,
    /// Sets to be kept, Status and settings to the log and the engines, link facts; then it starts.
    private func wire(_ target: Target) {
        let object = target.object
        target.connectivity?.onVerdictReady = { [unowned object] in object.verdictReady() }
        object.persist = { [unowned self, unowned target] key, call in
            target.persisted[key] = target.model.settings.text(key)
            return target.fromCommandLine ? .reply([]) : persist?(target, key, call) ?? .reply([])
        }
        object.onStatusChanged = { [unowned self, unowned target] state, _ in onStatusChanged?(target, state) }
        if let history {
            let model = target.model
            let keeper = history.keeper(for: target.number, minimumOutage: Self.minimumOutage(model.settings))
            model.timeInState = { [unowned keeper] in keeper.timeInState() }
            model.timeInStateTick = { [unowned keeper] in keeper.secondsCounted() }
            model.outages = { [unowned keeper] count in keeper.latest(count) }
            keeper.onOutageEnded = { [unowned object] outage in object.outageEnded(outage) }
            object.onPropertiesChanged = { [unowned keeper, unowned model] properties in
                guard properties.contains(.connectivity) || properties.contains(.blame) else { return }
                keeper.observe(model.state, minimumOutage: Self.minimumOutage(model.settings))
            }
        }
        adopt(target)
        let number = Int(target.number)
        target.connectivity?.onRouteVerdict = { [unowned self] family, verdict in
            tell(.routed(target: number, family: family, verdict))
        }
        tell(.targetTimeout(target: number, .milliseconds(target.model.settings.timeout)))
        // After this turn's signals: clients hear of a change before the work it causes.
        target.model.onSettingChanged = { [unowned self, unowned target] key in
            loop.atEndOfTurn { [weak self, weak target] in
                guard let self, let target else { return }
                onSettingChanged?(target, key)
                if key == .timeout {
                    tell(.targetTimeout(target: number, .milliseconds(target.model.settings.timeout)))
                }
                target.connectivity?.configure(target.model.configuration, changed: key.part)
            }
        }
        target.connectivity?.start()
    }

    func remove(path: String) throws(DBusError) {
        guard let index = all.firstIndex(where: { Self.path($0.number) == path }) else {
            throw .invalidArgs("no target at \(path)")
        }
        guard all[index].number != 0 else { throw .invalidArgs("the default target cannot be removed") }
        let target = all.remove(at: index)
        target.object.remove()
        history?.remove(target.number)
        service?.release(number: Int(target.number))
        tell(.targetGone(Int(target.number)))
        // The engines go with the last reference, after this turn's signals.
        loop.atEndOfTurn { _ = target }
        changed()
    }

    /// A blip shorter than FailureThreshold probes' worth is no outage.
    static func minimumOutage(_ settings: MonitorSettings) -> Duration {
        .milliseconds(settings.interval) * UInt64(settings.failureThreshold)
    }

    /// Holds back (or lets go) every target's first verdict: see `ConnectivityMonitor.holdFirstVerdict`.
    public func holdFirstVerdicts(_ hold: Bool) {
        for target in all { target.connectivity?.holdFirstVerdict(hold) }
    }

    /// The machine goes to sleep (true) or woke: every target's engines follow.
    public func sleep(_ asleep: Bool) {
        for target in all { target.connectivity?.sleep(asleep) }
    }

    public func route(_ path: ServiceCore.PathKey, _ verdict: ReachabilityVerdict, link: LinkView?) {
        target(path.target)?.connectivity?.routeDecided(path.family, verdict, link: link)
    }

    public func neighborAnswered(_ path: ServiceCore.PathKey, generation: UInt64, _ answer: NeighborAnswer) {
        target(path.target)?.connectivity?.neighborAnswered(path.family, generation: generation, answer)
    }

    public func linkChanged(_ path: ServiceCore.PathKey, _ id: LinkID, _ view: LinkView?) {
        target(path.target)?.connectivity?.linkChanged(path.family, id, view)
    }

    public func wake(_ number: Int) {
        target(number)?.connectivity?.timeout()
    }

    /// The service's driver keeps the target's wake-up (before it comes, the target keeps its own).
    private func adopt(_ target: Target) {
        guard let service, let connectivity = target.connectivity else { return }
        connectivity.onWakeupMoved = { [unowned service] in service.targetWakeupMoved() }
        service.adopt(connectivity.targetDriver, number: Int(target.number))
    }

    private func target(_ number: Int) -> Target? {
        all.first { Int($0.number) == number }
    }

    /// Hands the service's core `event`, or keeps it for when the core is there (targets without engines, as the
    /// fuzzer's, have nothing to tell: no service ever comes for them).
    private func tell(_ event: ServiceCore.Event) {
        guard let service else {
            if makeEngines != nil { untold.append(event) }
            return
        }
        service.handle(event)
    }

    func clientVanished(_ client: String) {
        for target in all { target.object.clientVanished(client) }
    }

    /// What the state file keeps of every target (not those of --target), by number.
    var stored: [UInt32: StoredState.Values] {
        Dictionary(uniqueKeysWithValues: all.filter { !$0.fromCommandLine }.map { ($0.number, $0.persisted) })
    }

    private func changed() {
        server.propertiesChanged(
            path: MonitorContract.objectPath, interface: MonitorContract.Targets.interface,
            [MonitorContract.Targets.targetsProperty])
        onChange?()
    }

    /// SIGHUP: the file's targets as at start-up. Those it no longer lists go (not those of --target, never the
    /// default one), those it adds come, and every other one takes its values but for those its command line
    /// gave. Returns what changed, and what was ignored.
    func reload(_ state: StoredState) -> (changes: [String], problems: [String]) {
        var changes: [String] = []
        var problems: [String] = []
        let listed = state.added
        let numbers = Set(listed.map(\.number))
        for target in added where !target.fromCommandLine && !numbers.contains(target.number) {
            try? remove(path: MonitorContract.Targets.path(target.number))
            changes.append("target \(target.number) removed")
        }
        for (number, values) in [(0, state.targets[0] ?? [:])] + listed {
            guard let target = all.first(where: { $0.number == number }) else {
                let before = all.count
                problems += restoreAdded([(number, values)])
                if all.count > before { changes.append("target \(number) added") }
                continue
            }
            let (settings, kept, invalid) = target.model.settings.applying(values, except: target.flagged)
            problems += invalid.map { Self.named(number, "\($0), ignored") }
            changes += target.model.take(settings).map {
                (number == 0 ? "" : "target \(number) ") + "\($0.name)=\(settings.text($0))"
            }
            target.persisted = kept
        }
        nextNumber = max(nextNumber, state.nextTarget)
        return (changes, problems)
    }

    /// Makes every target the state file keeps, as at start-up: the default one first (its lookups first),
    /// from `defaults` — the command line's settings — with the file's values but for the `flagged` keys, then
    /// the added ones; no number the file has seen is given again. Returns what was ignored.
    func restore(
        _ state: StoredState, defaults: MonitorSettings, flagged: Set<MonitorSettings.Key> = []
    ) throws(DBusError) -> [String] {
        nextNumber = max(nextNumber, state.nextTarget)
        let (settings, kept, invalid) = defaults.applying(state.targets[0] ?? [:], except: flagged)
        try add(
            settings: settings, number: 0, lookupsFirst: true, flagged: flagged, persisted: kept,
            interfaces: [declaration()])
        return invalid.map { Self.named(0, "\($0), ignored") } + restoreAdded(state.added)
    }

    /// The added targets the state file keeps; returns what was ignored.
    private func restoreAdded(_ list: [(number: UInt32, values: StoredState.Values)]) -> [String] {
        var problems: [String] = []
        for stored in list {
            let (settings, kept, invalid) = MonitorSettings().applying(stored.values)
            problems += invalid.map { Self.named(stored.number, "\($0), ignored") }
            guard kept[.host] != nil else { continue }
            do throws(DBusError) {
                try add(settings: settings, number: stored.number, persisted: kept)
            } catch {
                problems.append(Self.named(stored.number, error.message))
            }
        }
        return problems
    }

    /// What is said of target `number` in the log: the default one's without a name.
    static func named(_ number: UInt32, _ text: String) -> String {
        number == 0 ? text : "target \(number): \(text)"
    }
}
