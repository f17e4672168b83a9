import Timekeeping

/// How a target probes (INTERFACE.md "Quiet by default"): `adaptive` probes at the Interval only while unsure and
/// once per calm period otherwise; `steady` probes every Interval, always (the seed's engine).
public enum Probing: String, CaseIterable, Sendable {
    case adaptive, steady
}

/// Whether one family is calm or unsure (INTERFACE.md "Quiet by default"), without I/O: the suspicion open, if
/// any, and what its path says besides (its Connectivity not `full`, its link metered). `ProbeCore` holds one and
/// asks it how long to wait before its next scheduled probe.
struct ProbeCalm: Sendable {
    /// When the suspicion open now was opened (nil: none is open).
    private(set) var suspicionOpenedAt: Instant?
    /// Probes sent after it opened that were answered, in a row.
    private var answersSince: UInt32 = 0
    /// The path's Connectivity is not `full` (`none`, `limited`, `portal`): unsure whatever the probes say.
    var connectivityNotFull = false
    /// The route's link is metered: the calm period is four times as long.
    var metered = false

    /// Opens a suspicion now (one already open starts again from now).
    mutating func openSuspicion(now: Instant) {
        suspicionOpenedAt = now
        answersSince = 0
    }

    /// A probe sent at `sentAt` was answered: `recoveryThreshold` of them sent after the suspicion close it.
    mutating func answered(sentAt: Instant, recoveryThreshold: UInt32) {
        guard let opened = suspicionOpenedAt, sentAt >= opened else { return }
        answersSince += 1
        if answersSince >= max(recoveryThreshold, 1) { closeSuspicion() }
    }

    /// The thresholds decided (the host counts as answering again, or as not answering): the suspicion is closed.
    mutating func closeSuspicion() {
        suspicionOpenedAt = nil
        answersSince = 0
    }

    /// Calm: `adaptive`, a verdict that the host answers, Connectivity `full`, no suspicion open.
    func isCalm(_ settings: ProbeSettings, answering: Bool?) -> Bool {
        settings.probing == .adaptive && answering == true && !connectivityNotFull && suspicionOpenedAt == nil
    }

    /// max(IdleInterval, Interval); max(4 × IdleInterval, Interval) while metered.
    func period(_ settings: ProbeSettings) -> Duration {
        max(settings.idleInterval * (metered ? 4 : 1), settings.interval)
    }
}
