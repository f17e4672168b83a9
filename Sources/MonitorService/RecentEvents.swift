/// At most `limit` events in any `window` nanoseconds: remembers the times of the last
/// `limit` ones that were allowed.
struct RecentEvents {
    let limit: Int
    let window: UInt64
    private var times: [UInt64] = []

    init(limit: Int, window: UInt64) {
        self.limit = limit
        self.window = window
    }

    /// Whether one more event may happen at `now`.
    mutating func hasRoom(now: UInt64) -> Bool {
        times.removeAll { now &- $0 >= window }
        return times.count < limit
    }

    /// Counts an event that happened at `now` (after `hasRoom` said it may).
    mutating func record(now: UInt64) {
        times.append(now)
    }
}
