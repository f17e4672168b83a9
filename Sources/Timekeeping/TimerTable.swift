/// A core's timers by name (in the manner of quinn-proto's `TimerTable`): each timer a case of
/// `Timer`, its deadline kept by the core (or by the part of it the timer stands for), and the
/// order of the cases the order timers due at the same moment run in. The core's wake-up is the
/// earliest deadline in its table.
public protocol TimerTable {
    associatedtype Timer: CaseIterable, Hashable

    /// When `timer` is due; nil while it is not armed.
    func deadline(_ timer: Timer) -> Instant?
}

// Always inlined: a core is a large struct, and a call that is not inlined is handed a copy of it
// when the caller is one of its mutating methods (as every caller here is).
extension TimerTable {
    /// The earliest deadline of any armed timer; nil when none is.
    @inlinable @inline(__always)
    public var earliestDeadline: Instant? {
        var earliest: Instant?
        for timer in Timer.allCases {
            if let at = deadline(timer), at < earliest ?? .distantFuture { earliest = at }
        }
        return earliest
    }

    /// The timer due first at `now` or before (by deadline, then by the order of the cases).
    @inlinable @inline(__always)
    public func firstDue(now: Instant) -> (timer: Timer, at: Instant)? {
        var first: (timer: Timer, at: Instant)?
        for timer in Timer.allCases {
            guard let at = deadline(timer), at <= now else { continue }
            if let earlier = first, earlier.at <= at { continue }
            first = (timer, at)
        }
        return first
    }

    /// Whether `timer` is due at `now`.
    @inlinable @inline(__always)
    public func isDue(_ timer: Timer, now: Instant) -> Bool {
        deadline(timer).map { $0 <= now } ?? false
    }
}
