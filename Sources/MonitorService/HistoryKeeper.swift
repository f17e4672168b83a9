import EventLoop
import HelperProcess
import MonitorContract
import MonitorRules
import ServiceLog
import Timekeeping

/// One target's history on the loop: the pure `OutageHistory`, fed what the target publishes and
/// the sleeps the service hears of, on CLOCK_BOOTTIME and CLOCK_REALTIME; its files in the state
/// directory (`history` for the default target, `history.N` for target N: the whole history, written when
/// the outages change; `history….time`: the time in each value, a few hundred bytes written every 10 s), read
/// once at start — a corrupt or oversized one set aside with a log line — and written by `HistoryBook`.
final class HistoryKeeper {
    let file: AtomicFile?
    /// The time in state, written every 10 s beside `file`.
    let timeFile: AtomicFile?
    // Every access is one call on the value (pure: it cannot reach back here), so none overlaps another; the
    // run-time check is left out, as it is read on every Get.
    @exclusivity(unchecked) private(set) var history: OutageHistory
    /// Once per outage, when it ended (Connectivity back to `full`, or the machine went to sleep).
    var onOutageEnded: ((Outage) -> Void)?
    /// The outages' revision last handed to the writer with the whole file.
    private var writtenOutages: UInt64?
    /// The time-in-state text last handed to the writer: unchanged text is not written again.
    private var writtenTime: String?
    private var seen: (connectivity: Connectivity, blame: Blame?)?

    init(file: AtomicFile?, minimumOutage: Duration) {
        self.file = file
        timeFile = file.map { AtomicFile(directory: $0.directory, name: $0.name + ".time") }
        let (loaded, fromFile) = Self.load(file, minimumOutage: minimumOutage)
        history = loaded
        if let timeFile, fromFile { Self.loadTime(timeFile, into: &history, minimumOutage: minimumOutage) }
        // What was read is on disk; a history begun afresh is written whole at the first tick (its time file
        // would name a beginning no file holds).
        writtenOutages = fromFile ? history.outageChanges : nil
        history.observeStart(boot: MonotonicClock.bootTime())
    }

    /// The time in state written after the whole file last was: taken when it is the same history's.
    private static func loadTime(_ file: AtomicFile, into history: inout OutageHistory, minimumOutage: Duration) {
        switch file.read(maximumSize: OutageHistoryFile.maximumTimeInStateSize) {
        case .success(nil):
            return
        case .success(let bytes?):
            do throws(OutageHistoryFile.Corrupt) {
                let time = try OutageHistoryFile.decode(bytes, minimumOutage: minimumOutage)
                guard time.outages.isEmpty else { return setAside(file, because: "outages in a time-in-state file") }
                if time.began == history.began { history.restoreSpent(time.spent) }
            } catch {
                setAside(file, because: error.description)
            }
        case .failure(let refused):
            setAside(file, because: refused.description)
        }
    }

    /// The history in `file`, and whether it came from there (else it begins afresh now).
    private static func load(_ file: AtomicFile?, minimumOutage: Duration) -> (OutageHistory, fromFile: Bool) {
        let fresh = OutageHistory(began: MonotonicClock.wallTime(), minimumOutage: minimumOutage)
        guard let file else { return (fresh, false) }
        switch file.read(maximumSize: OutageHistoryFile.maximumSize) {
        case .success(nil):
            return (fresh, false)
        case .success(let bytes?):
            do throws(OutageHistoryFile.Corrupt) {
                return (try OutageHistoryFile.decode(bytes, minimumOutage: minimumOutage), true)
            } catch {
                setAside(file, because: error.description)
                return (fresh, false)
            }
        case .failure(let refused):
            setAside(file, because: refused.description)
            return (fresh, false)
        }
    }

    private static func setAside(_ file: AtomicFile, because why: String) {
        let moved = file.setAside()
        Log.warning(
            "\(file.path): \(why): " + (moved ? "set aside as \(file.path).corrupt, " : "") + "history starts afresh")
    }

    /// What the target published (call after every change of Connectivity, Blame or Reason).
    func observe(_ state: MonitorState, minimumOutage: Duration) {
        history.minimumOutage = minimumOutage
        let now = (connectivity: state.connectivity, blame: state.blame)
        guard seen.map({ $0.connectivity != now.connectivity || $0.blame != now.blame }) ?? true else { return }
        seen = now
        if let ended = history.observe(
            state.connectivity, blame: state.blame, reason: state.reason,
            boot: MonotonicClock.bootTime(), real: MonotonicClock.wallTime())
        {
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
    private static func ask<Answer>(
        _ history: inout OutageHistory, _ question: (inout OutageHistory) -> Answer
    ) -> Answer {
        question(&history)
    }

    /// What is to be written now: the whole file (`whole`) when the outages changed since it was last written, else
    /// the time in state when it changed; nil when nothing did. Marked written as it is handed out.
    func due() -> (file: AtomicFile, text: String, whole: Bool)? {
        history.settle(boot: MonotonicClock.bootTime())
        history.prune(real: MonotonicClock.wallTime())
        if outagesDue, let file {
            writtenOutages = history.outageChanges
            return (file, OutageHistoryFile.encode(history), true)
        }
        guard let timeFile else { return nil }
        let time = OutageHistoryFile.encodeTimeInState(history)
        guard time != writtenTime else { return nil }
        writtenTime = time
        return (timeFile, time, false)
    }

    /// The outages changed since the whole file was last written.
    var outagesDue: Bool { history.outageChanges != writtenOutages }
}
