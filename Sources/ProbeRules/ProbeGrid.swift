import Timekeeping

/// Where the schedule's next probe goes: on the Interval's grid (the multiples of the Interval on the
/// core's clock), so that every target at one Interval — or at multiples of it — probes in the same
/// instant and the loop wakes once for all of them, however far apart they were added. A schedule off
/// the grid moves toward it by at most a sixteenth of the Interval a probe: gaps stay between one
/// Interval and 17/16 of it, never shorter.
public enum ProbeGrid {
    /// The tick after a probe sent at `now`; for the schedule's own probe, `due` is the tick it was due at:
    /// the loop waking a little late for it never moves the schedule off the grid.
    public static func next(after now: Instant, due: Instant? = nil, interval: Duration) -> Instant {
        let period = interval.nanoseconds
        guard period > 0 else { return now }
        let from = due.flatMap { now < $0 &+ interval ? $0 : nil } ?? now
        let next = from &+ interval
        let pastTick = next.nanoseconds % period
        guard pastTick > 0 else { return next }
        return next &+ Duration(nanoseconds: min(period - pastTick, period / 16))
    }
}
