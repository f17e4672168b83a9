import MonitorRules
import NetAddress
import Timekeeping

extension Simulation {
    /// A dual-stack target's headline over the run (INTERFACE.md "Every path"): when it was first `full`, how
    /// often Connectivity and Status moved after that, and what each family's probes cost while both were full.
    public struct Headline: Sendable {
        /// When Connectivity was first `full`; nil: never.
        public var firstFull: Instant?
        /// Changes of Connectivity and of Status after the first `full`.
        public var transitions = 0
        public var statusChanges = 0
        public var probes: [IPFamily: Int] { [.v4: sentCounts[0], .v6: sentCounts[1]] }
        /// Each family's probes sent while every family was full, and the time that lasted.
        public var probesWhileAllFull: [IPFamily: Int] { [.v4: sentWhileAllFull[0], .v6: sentWhileAllFull[1]] }
        // By `TargetCore.index(of:)`: counted at every probe, where a dictionary would hash.
        var sentCounts = [0, 0]
        var sentWhileAllFull = [0, 0]
        public var allFull = Duration.zero
        var allFullSince: Instant?

        /// A state published at `now`, after `last` (Status and Connectivity) was.
        mutating func note(_ state: MonitorState, now: Instant, last: (Status, Connectivity)?) {
            if let last, firstFull != nil {
                if last.1 != state.connectivity { transitions += 1 }
                if last.0 != state.status { statusChanges += 1 }
            }
            if state.connectivity == .full && firstFull == nil { firstFull = now }
            let both = state.ipv4.connectivity == .full && state.ipv6.connectivity == .full
            if let since = allFullSince, !both {
                allFull += now - since
                allFullSince = nil
            } else if both && allFullSince == nil {
                allFullSince = now
            }
        }

        mutating func sent(_ family: IPFamily) {
            let index = TargetCore.index(of: family)
            sentCounts[index] += 1
            if allFullSince != nil { sentWhileAllFull[index] += 1 }
        }

        mutating func end(now: Instant) {
            if let since = allFullSince { allFull += now - since }
            allFullSince = nil
        }
    }

    /// The default target's headline (counted on any network; moved only on a dual-stack one).
    public var headline: Headline { first.headline }
}
