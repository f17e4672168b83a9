import EventLoop
import MonitorContract
import MonitorRules
import Timekeeping

/// One target's history on the loop: the pure `OutageHistory`, fed what the target publishes and
/// the sleeps the service hears of, on CLOCK_BOOTTIME and CLOCK_REALTIME; its file in the state
/// directory (`history` for the default target, `history.N` for target N), read once at start — a
/// corrupt or oversized one set aside with a log line — and written by `HistoryBook`.
final class HistoryKeeper {
    let file: AtomicFile?
    // Every access is one call on the value (pure: it cannot reach back here), so none overlaps another; the
    // run-time check is left out, as it is read on every Get.
    @exclusivity(unchecked) private(set) var history: OutageHistory
    /// Once per outage, when it ended (Connectivity back to `full`, or the machine went to sleep).
    var onOutageEnded: ((Outage) -> Void)?
    /// The text last handed to the writer: unchanged text is not written again.
    var written: String?
    private var seen: (connectivity: Connectivity, blame: String)?

    init(file: AtomicFile?, minimumOutage: Duration) {
        self.file = file
        history = Self.load(file, minimumOutage: minimumOutage)
        history.observeStart(boot: MonotonicClock.bootTime())
    }

    private static func load(_ file: AtomicFile?, minimumOutage: Duration) -> OutageHistory {
        let fresh = OutageHistory(began: MonotonicClock.wallTime(), minimumOutage: minimumOutage)
        guard let file else { return fresh }
        switch file.read(maximumSize: OutageHistoryFile.maximumSize) {
        case .success(nil):
            return fresh
        case .success(let bytes?):
            do throws(OutageHistoryFile.Corrupt) {
                return try OutageHistoryFile.decode(bytes, minimumOutage: minimumOutage)
            } catch {
                setAside(file, because: error.description)
                return fresh
            }
        case .failure(let refused):
            setAside(file, because: refused.description)
            return fresh
        }
    }

    private static func setAside(_ file: AtomicFile, because why: String) {
        let moved = file.setAside()
        Log.warning("\(file.path): \(why): " + (moved ? "set aside as \(file.path).corrupt, " : "") + "history starts afresh")
    }

    /// What the target published (call after every change of Connectivity, Blame or Reason).
    func observe(_ state: MonitorState, minimumOutage: Duration) {
        history.minimumOutage = minimumOutage
        let now = (connectivity: state.connectivity, blame: state.blame)
        guard seen.map({ $0.connectivity != now.connectivity || $0.blame != now.blame }) ?? true else { return }
        seen = now
        if let ended = history.observe(state.connectivity, blame: state.blame, reason: state.reason,
                                       boot: MonotonicClock.bootTime(), real: MonotonicClock.wallTime()) {
            onOutageEnded?(ended)
        }
    }

    func suspend() {
        if let ended = history.suspend(boot: MonotonicClock.bootTime()) { onOutageEnded?(ended) }
    }

    func resume() {
        history.resume(boot: MonotonicClock.bootTime(), real: MonotonicClock.wallTime())
    }

    /// A sleep nobody announced, `duration` long, just ended.
    func slept(_ duration: Duration) {
        history.slept(duration, boot: MonotonicClock.bootTime())
    }

    func timeInState() -> [(String, UInt64)] { Self.ask(&history) { $0.timeInState(boot: MonotonicClock.bootTime()) } }

    /// The whole seconds TimeInState counts now: read on every Get, to know whether a kept reply still holds.
    func secondsCounted() -> UInt64 { Self.ask(&history) { $0.secondsCounted(boot: MonotonicClock.bootTime()) } }

    /// The `count` latest outages, newest first.
    func latest(_ count: Int) -> [Outage] { Self.ask(&history) { $0.latest(count) } }

    /// The history lent in place: a method called on it through the stored property would copy it first.
    private static func ask<Answer>(_ history: inout OutageHistory, _ question: (inout OutageHistory) -> Answer) -> Answer {
        question(&history)
    }

    /// The file's text as of now.
    func text() -> String {
        history.settle(boot: MonotonicClock.bootTime())
        history.prune(real: MonotonicClock.wallTime())
        return OutageHistoryFile.encode(history)
    }
}
