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

    /// Whether one more event may happen at `now`; counts it when it may.
    mutating func allow(now: UInt64) -> Bool {
        times.removeAll { now &- $0 >= window }
        guard times.count < limit else { return false }
        times.append(now)
        return true
    }
}
