import DaemonWorlds
import EventLoop
import HelperProcess
import MonitorRules
import ServiceLog
import Timekeeping

/// Every target's history, for the whole service: the keepers, and their files written in the blocking
/// helper when the service's core says (each `ServiceCore.tick`, before a sleep) and at once at shutdown.
/// The sleeps the core finds are handed to every keeper here.
///
/// A history is written when it changes: its time in state (a few hundred bytes) every 10 s, the whole file
/// only when its outages changed; and however many targets changed at once, one turn encodes at most
/// `wholeFilesPerTurn` bytes of whole files (the rest follow at the next ticks), so no write stalls the loop
/// or fills the helper's queue.
final class HistoryBook: ServiceHistories {
    static let wholeFilesPerTurn = 1 << 20

    private let directory: String?
    private let helper: BlockingHelper?
    private var keepers: [UInt32: HistoryKeeper] = [:]

    /// `directory`: the state directory (nil: histories are kept in memory only).
    init(directory: String?, helper: BlockingHelper) {
        self.directory = directory
        self.helper = directory == nil ? nil : helper
        // Written quietly: the helper says only what failed (the error names the file).
        self.helper?.onQuietFailure(of: .history) { answer in
            if case .written(let error?) = answer { Log.warning("cannot write a history: \(error)") }
        }
    }

    /// Target `number`'s keeper, its file read now.
    func keeper(for number: UInt32, minimumOutage: Duration) -> HistoryKeeper {
        if let known = keepers[number] { return known }
        let file = directory.map { AtomicFile(directory: $0, name: number == 0 ? "history" : "history.\(number)") }
        let keeper = HistoryKeeper(file: file, minimumOutage: minimumOutage)
        keepers[number] = keeper
        return keeper
    }

    /// Target `number` was removed: its history goes with it.
    func remove(_ number: UInt32) {
        guard let keeper = keepers.removeValue(forKey: number) else { return }
        for file in [keeper.file, keeper.timeFile].compactMap({ $0 }) {
            helper?.runQuietly(.remove(directory: file.directory, name: file.name), on: .history)
        }
    }

    /// The machine goes to sleep (true) or woke: the time asleep is in no running value or outage.
    public func sleep(_ asleep: Bool) {
        for keeper in keepers.values {
            if asleep { keeper.suspend() } else { keeper.resume() }
        }
    }

    /// The machine slept `jump` unannounced: the time asleep leaves the running values and outages.
    public func slept(_ jump: Duration) {
        for keeper in keepers.values { keeper.slept(jump) }
    }

    /// Hands what changed of every history to the helper, whole files up to `budget` bytes (the others wait,
    /// marked due, for the next call).
    public func writeAll() { writeAll(budget: Self.wholeFilesPerTurn) }

    func writeAll(budget: Int) {
        guard let helper else { return }
        var encoded = 0
        for number in keepers.keys.sorted() {
            guard let keeper = keepers[number] else { continue }
            if keeper.outagesDue && encoded >= budget { continue }
            guard let (file, text, whole) = keeper.due() else { continue }
            if whole { encoded += text.utf8.count }
            helper.runQuietly(.write(directory: file.directory, name: file.name, text: text), on: .history)
        }
    }

    /// At shutdown: every history on disk before the service exits, a bounded batch at a time.
    func flush() {
        guard let helper else { return }
        repeat {
            writeAll()
            helper.drain(.history)
        } while keepers.values.contains { $0.outagesDue }
    }
}
