/// The probe core's timers (in the manner of quinn-proto's `Timer`): each a name, its deadline
/// kept by the core, and an order for timers due at the same moment.
enum ProbeTimer: Int, CaseIterable, Comparable {
    /// The earliest Timeout of a probe in flight: it counts as lost before the next probe goes out.
    case probeTimeout
    /// A probe unanswered past the round trip it should have taken: a follow-up goes out beside it.
    case overdue
    /// The probe a Check waits for, held back by the one-forced-probe-per-Timeout limit.
    case deferredProbe
    /// The schedule's next probe, every Interval.
    case scheduledProbe

    static func < (a: ProbeTimer, b: ProbeTimer) -> Bool { a.rawValue < b.rawValue }
}

extension ProbeCore {
    /// When `timer` is due; nil while it is not armed.
    func deadline(_ timer: ProbeTimer) -> UInt64? {
        switch timer {
        case .probeTimeout: tracker.nextDeadline
        case .overdue: overdue?.at
        case .deferredProbe: deferredProbeAt
        case .scheduledProbe: nextProbeAt
        }
    }

    /// The timer due first at `now` or before (by deadline, then by the order above).
    func firstDue(now: UInt64) -> (timer: ProbeTimer, at: UInt64)? {
        var first: (timer: ProbeTimer, at: UInt64)?
        for timer in ProbeTimer.allCases {
            guard let at = deadline(timer), at <= now else { continue }
            if let earlier = first, earlier.at <= at { continue }
            first = (timer, at)
        }
        return first
    }

    /// The earliest deadline of any armed timer.
    var earliestDeadline: UInt64? {
        var earliest: UInt64?
        for timer in ProbeTimer.allCases {
            if let at = deadline(timer), at < earliest ?? .max { earliest = at }
        }
        return earliest
    }
}
