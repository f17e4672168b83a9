import Timekeeping

/// The probe core's timers (in the manner of quinn-proto's `Timer`): each a name, its deadline
/// kept by the core, and an order for timers due at the same moment.
public enum ProbeTimer: CaseIterable, Hashable, Sendable {
    /// The earliest Timeout of a probe in flight: it counts as lost before the next probe goes out.
    case probeTimeout
    /// A probe unanswered past the round trip it should have taken: a follow-up goes out beside it.
    case overdue
    /// The probe a Check waits for, held back by the one-forced-probe-per-Timeout limit.
    case deferredProbe
    /// The schedule's next probe, every Interval.
    case scheduledProbe
}

extension ProbeCore: TimerTable {
    public func deadline(_ timer: ProbeTimer) -> Instant? {
        switch timer {
        case .probeTimeout: tracker.nextDeadline
        case .overdue: overdue?.at
        case .deferredProbe: deferredProbeAt
        case .scheduledProbe: nextProbeAt
        }
    }
}
