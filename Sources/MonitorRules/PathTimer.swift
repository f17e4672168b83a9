import Timekeeping

/// The path core's timers: each the deadline of one of its parts, which keeps it. `.timeout` runs
/// those due, in this order.
public enum PathTimer: CaseIterable, Hashable, Sendable {
    /// Host looked up again (the refresh, or a retry), and the HTTP check's next run: `MonitorCore`'s.
    case lookupAndCheck
    /// The next sample of the machine's traffic, or a `flowing` word's second running out: `TrafficWatch`'s.
    case traffic
    /// The probe schedule: `ProbeCore`'s own table (timeouts, follow-ups, deferred and scheduled probes).
    case probe
    /// The next hop's recheck: `PathDiagnosis`'s.
    case diagnosis
}

extension PathCore: TimerTable {
    public func deadline(_ timer: PathTimer) -> Instant? {
        switch timer {
        case .lookupAndCheck: monitor.nextWakeup
        case .traffic: trafficWatch.nextWakeup
        case .probe: probe.nextWakeup
        case .diagnosis: diagnosis.nextWakeup
        }
    }
}
