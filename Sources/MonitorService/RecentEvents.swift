import Timekeeping

/// At most `limit` events in any `window`: remembers the times of the last
/// `limit` ones that were allowed.
struct RecentEvents {
    let limit: Int
    let window: Duration
    private var times: [Instant] = []

    init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    /// Whether one more event may happen at `now`.
    mutating func hasRoom(now: Instant) -> Bool {
        times.removeAll { now &- $0 >= window }
        return times.count < limit
    }

    /// Counts an event that happened at `now` (after `hasRoom` said it may).
    mutating func record(now: Instant) {
        times.append(now)
    }
}
