import DBusKit
import EventLoop
import MonitorContract
import MonitorRules
import ServiceLog
import Timekeeping

/// The exported /org/netobserver/Monitor: binds the model to the bus, turns
/// model changes into PropertiesChanged and StatusChanged, and keeps the
/// pending Wait and Check calls.
public final class MonitorObject {
    private let model: MonitorModel
    private let server: ObjectServer
    /// Where this target is exported: the default target at MonitorContract.objectPath, added ones below it.
    public let path: String
    private let budget: PendingBudget
    private let waits: PendingCalls
    private let checks: PendingCalls

    /// Called after each StatusChanged, with the new state.
    public var onStatusChanged: ((MonitorState, String) -> Void)?
    /// After each change of the state's properties, with their names.
    public var onPropertiesChanged: (([MonitorContract.Property]) -> Void)?
    /// Keeps a value just Set over D-Bus and answers the Set (when saved); nil: answered at once.
    public var persist: ((MonitorSettings.Key, MethodCall) -> MethodOutcome)?

    /// `budget`: the pending calls of every target together.
    public init(
        model: MonitorModel, server: ObjectServer, path: String = MonitorContract.objectPath,
        budget: PendingBudget = PendingBudget(),
        extraInterfaces: [DBusInterface] = []
    ) {
        self.model = model
        self.server = server
        self.path = path
        self.budget = budget
        waits = PendingCalls(loop: server.loop, kind: .wait, budget: budget)
        checks = PendingCalls(loop: server.loop, kind: .check, budget: budget)
        let declaration = MonitorInterface.declaration(
            model: model,
            check: { [unowned self] call throws(DBusError) in try check(call) },
            wait: { [unowned self] call throws(DBusError) in try wait(call) },
            getHistory: { [unowned self] call throws(DBusError) in try history(call) },
            persist: { [unowned self] key, call in persist?(key, call) ?? .reply([]) })
        server.export(path: path, interfaces: [declaration] + extraInterfaces)
        model.onChange = { [unowned self] properties, announceStatus in
            modelChanged(properties, announceStatus: announceStatus)
        }
    }

    /// The target is removed: its pending calls are answered with UnknownObject, and it
    /// leaves the bus (InterfacesRemoved below an ObjectManager).
    public func remove() {
        let gone = DBusError.unknownObject("\(path) was removed")
        waits.resolveAll { $0.fail(gone) }
        checks.resolveAll { $0.fail(gone) }
        model.onChange = nil
        server.unexport(path: path)
    }

    /// A client left the bus: its pending calls go without an answer.
    public func clientVanished(_ client: String) {
        let dropped = waits.clientVanished(client) + checks.clientVanished(client)
        if dropped > 0 { Log.debug("\(client) left the bus: dropped its \(dropped) pending calls") }
    }

    /// The engines report that a verdict is in: pending Checks get it.
    public func verdictReady() {
        let status = model.state.status.rawValue
        checks.resolveAll { $0.reply([.string(status)]) }
    }

    private func modelChanged(_ properties: [MonitorContract.Property], announceStatus: Bool) {
        if !properties.isEmpty {
            // Quiet properties (RoundTripTime, PacketLoss, the counters: every probe changes them) go out only beside a
            // loud one: a change of them alone builds no signal.
            if properties.contains(where: { $0.changeMode == .emits || $0.changeMode == .invalidates }) {
                server.propertiesChanged(path: path, interface: MonitorContract.interface, properties.map(\.name))
            }
            onPropertiesChanged?(properties)
        }
        guard announceStatus else { return }
        try? server.emit(
            path: path, interface: MonitorContract.interface,
            signal: MonitorContract.Signal.statusChanged.name,
            [.string(model.state.status.rawValue), .string(model.settings.host)])
        onStatusChanged?(model.state, model.settings.host)
        if model.state.reachable {
            waits.resolveAll { $0.reply([.boolean(true)]) }
        }
    }

    /// OutageEnded, once per outage.
    public func outageEnded(_ outage: Outage) {
        try? server.emit(
            path: path, interface: MonitorContract.interface, signal: MonitorContract.Signal.outageEnded.name,
            [.uint64(outage.start.microseconds), .uint64(outage.duration.microseconds), .string(outage.blame)])
    }

    /// GetHistory(max): the newest outages, as many as fit the reply bound.
    private func history(_ call: MethodCall) throws(DBusError) -> MethodOutcome {
        guard let max = call.uint32(at: 0) else { throw .invalidArgs("max: expected a uint32") }
        var entries: [DBusValue] = []
        // As the dispatcher bounds a reply's body (the array's own header included), with room to spare.
        var bytes = 16
        for outage in model.outages(Int(min(max, MonitorContract.historyLimit))) {
            let entry = DBusValue.structure([
                .uint64(outage.start.microseconds), .uint64(outage.duration.microseconds), .string(outage.blame),
                .string(outage.worst.rawValue), .string(outage.reason),
            ])
            guard bytes + entry.wireSizeBound <= MonitorContract.historyReplyBytes - 2_048 else { break }
            bytes += entry.wireSizeBound
            entries.append(entry)
        }
        return .reply([.array(.structure([.uint64, .uint64, .string, .string, .string]), entries)])
    }

    private func check(_ call: MethodCall) throws(DBusError) -> MethodOutcome {
        // Nobody would hear the verdict: nothing to keep, nothing to probe for.
        guard call.expectsReply else { return .reply([]) }
        try budget.admit(call, .check) { [weak self] call in self?.keepCheck(call) }
        return .later
    }

    private func keepCheck(_ call: MethodCall) {
        // Pending before the probe goes out: a probe that fails at once delivers its verdict right away.
        // The verdict is in within two Timeouts (a forced probe may wait one Timeout for the
        // previous one); the margin covers scheduling.
        let deadline = Duration.milliseconds(2 * UInt64(model.settings.timeout) + 100)
        checks.add(call, timeout: deadline) { [unowned self] call in
            call.reply([.string(model.state.status.rawValue)])
        }
        if model.probeNow?() != true, checks.remove(call) {
            // Nothing to probe (no engine, no address, no route): the current verdict is the answer.
            call.reply([.string(model.state.status.rawValue)])
        }
    }

    private func wait(_ call: MethodCall) throws(DBusError) -> MethodOutcome {
        guard let timeout = call.uint32(at: 0), MonitorContract.waitTimeoutRange.contains(timeout) else {
            let r = MonitorContract.waitTimeoutRange
            throw .invalidArgs("timeout_ms: out of range (accepted: \(r.lowerBound)–\(r.upperBound) ms)")
        }
        if model.state.reachable { return .reply([.boolean(true)]) }
        if timeout == 0 || !call.expectsReply { return .reply([.boolean(false)]) }
        try budget.admit(call, .wait) { [weak self] call in
            guard let self else { return }
            // The caller's user may have been asked of the bus meanwhile.
            guard !model.state.reachable else {
                call.reply([.boolean(true)])
                return
            }
            waits.add(call, timeout: .milliseconds(timeout)) { call in
                call.reply([.boolean(false)])
            }
        }
        return .later
    }
}
