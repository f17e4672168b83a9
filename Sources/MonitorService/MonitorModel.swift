import DaemonWorlds
import EventLoop
import MonitorContract
import MonitorRules
import NetAddress
import NetCore

/// The service's state and settings, and the single place they change.
///
/// Every change goes through here, so observers learn exactly which
/// properties changed and whether Status did. The engines feed it verdicts
/// through `update`; until they run, it reports `unknown` and says why.
public final class MonitorModel {
    public private(set) var settings: MonitorSettings { didSet { version &+= 1 } }
    public private(set) var state = MonitorState() { didSet { version &+= 1 } }
    /// Changes with every change of settings or state (GetAll answers from its last reply while it stays).
    // Read on every Get and GetAll; a single load or increment, so the run-time check is left out.
    @exclusivity(unchecked) public private(set) var version: UInt64 = 0

    /// Called after each change with the changed property names, and whether
    /// StatusChanged is due: Status changed, or Host did (a new target's status starts over).
    public var onChange: ((_ properties: [MonitorContract.Property], _ announceStatus: Bool) -> Void)?
    /// Called after a setting was changed from outside (D-Bus Set).
    public var onSettingChanged: ((MonitorSettings.Key) -> Void)?
    /// Asks the engines for a fresh verdict; returns false when there is nothing to
    /// probe (no address, no route), so Check answers at once. nil while no engine runs.
    public var probeNow: (() -> Bool)?
    /// Seconds in each Connectivity value and asleep (TimeInState); every key at 0 while no history is kept.
    public var timeInState: () -> [(String, UInt64)] = {
        (Connectivity.allCases.map(\.rawValue) + [OutageHistory.asleep]).map { ($0, UInt64(0)) }
    }
    /// Changes exactly when TimeInState does (the seconds it adds up to): part of the interface's version,
    /// so Get and GetAll never answer with a TimeInState kept from an earlier second.
    @exclusivity(unchecked) public var timeInStateTick: () -> UInt64 = { 0 }
    /// The last `count` outages, newest first (GetHistory).
    public var outages: (Int) -> [Outage] = { _ in [] }
    /// Whether an address is one of this machine's, as the kernel last said (CheckURL may not name one).
    public var isThisMachine: (IPAddress) -> Bool = { _ in false }

    public static let noEngineReason = "no verdict: the reachability and probe engines are not running"

    public init(settings: MonitorSettings, now: UInt64 = MonotonicClock.wallMicroseconds()) {
        self.settings = settings
        state.reason = Self.noEngineReason
        state.lastChange = now
    }

    /// Applies a change to the state and tells the observers what changed.
    public func update(now: UInt64 = MonotonicClock.wallMicroseconds(), _ change: (inout MonitorState) -> Void) {
        update(now: now, announce: false, change)
    }

    private func update(now: UInt64, announce: Bool, _ change: (inout MonitorState) -> Void) {
        let old = state
        var new = state
        change(&new)
        if new.status != old.status { new.lastChange = now }
        if new.status.isConnected { new.reason = "" }
        guard new != old || announce else { return }
        state = new
        onChange?(new.changedProperties(from: old), announce || new.status != old.status)
    }

    /// Validates and stores a new setting value from D-Bus. Nothing changes on error.
    public func set(
        _ key: MonitorSettings.Key, _ apply: (inout MonitorSettings) throws(SettingError) -> Void
    ) throws(SettingError) {
        var new = settings
        try apply(&new)
        guard new != settings else { return }
        let old = settings
        settings = new
        if new.host != old.host || new.family != old.family {
            // A new target: no verdict and no measurements for it yet. Reset before the
            // engines hear of it, so StatusChanged goes out once.
            update(now: MonotonicClock.wallMicroseconds(), announce: new.host != old.host) { state in
                state.status = .unknown
                state.connectivity = .unknown
                state.probeMethod = ""
                state.portalURL = ""
                state.address = ""
                state.interface = ""
                state.traffic = .none
                state.roundTripTime = 0
                state.packetLoss = 0
                state.ipv4 = FamilyState()
                state.ipv6 = FamilyState()
                state.ipv4Path = nil
                state.blame = nil
                state.reason = probeNow == nil ? Self.noEngineReason : "resolving \(new.host)"
            }
        }
        onChange?([key.property], false)
        onSettingChanged?(key)
    }

    /// Takes `new` (already validated) one changed key at a time, as a Set of each would;
    /// returns the keys that changed.
    @discardableResult
    public func take(_ new: MonitorSettings) -> [MonitorSettings.Key] {
        let changed = new.changedKeys(from: settings)
        for key in changed {
            try? set(key) { (settings: inout MonitorSettings) throws(SettingError) in
                try settings.set(key, text: new.text(key), fromAdministrator: new.mayPointInward(key))
            }
        }
        return changed
    }
}

extension MonitorModel: TargetModel {
    public var configuration: TargetConfiguration { settings.configuration }

    public func update(_ change: (inout MonitorState) -> Void) {
        update(now: MonotonicClock.wallMicroseconds(), change)
    }
}
