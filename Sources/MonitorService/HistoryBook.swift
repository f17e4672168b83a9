import HelperProcess
import EventLoop
import MonitorRules
import Timekeeping

/// Every target's history, for the whole service: the keepers, their files written in the blocking
/// helper at most once per `writeInterval` (and at once at shutdown), and the sleeps — logind's, and the jumps
/// of CLOCK_BOOTTIME over CLOCK_MONOTONIC that no one announced — handed to every target.
///
/// A history is written when it changes: its time in state (a few hundred bytes) every 10 s, the whole file
/// only when its outages changed; and however many targets changed at once, one turn encodes at most
/// `wholeFilesPerTurn` bytes of whole files (the rest follow at the next ticks), so no write stalls the loop
/// or fills the helper's queue.
final class HistoryBook {
    static let writeInterval = Duration.seconds(10)
    static let wholeFilesPerTurn = 1 << 20
    /// A jump of BOOTTIME over MONOTONIC longer than this is a sleep (clock adjustments never move either).
    static let sleepJump = Duration.seconds(1)

    private let loop: MainLoop
    private let directory: String?
    private let helper: BlockingHelper?
    private var keepers: [UInt32: HistoryKeeper] = [:]
    private var timer: LoopTimer?
    private var slept = MonotonicClock.slept()
    private var asleep = false
    /// The machine slept (logind said so: `announced`) or woke; the targets' engines follow.
    var onSleep: ((_ asleep: Bool) -> Void)?

    /// `directory`: the state directory (nil: histories are kept in memory only).
    init(loop: MainLoop, directory: String?, helper: BlockingHelper) {
        self.loop = loop
        self.directory = directory
        self.helper = directory == nil ? nil : helper
        // Written quietly: the helper says only what failed (the error names the file).
        self.helper?.onQuietFailure(of: .history) { answer in
            if case .written(let error?) = answer { Log.warning("cannot write a history: \(error)") }
        }
        timer = loop.schedule(after: Self.writeInterval, leeway: Self.writeInterval, repeats: true) { [unowned self] in
            tick()
        }
    }

    deinit {
        if let timer { loop.cancel(timer) }
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

    /// logind: the machine is about to sleep (true) or woke (false).
    func sleepAnnounced(_ value: Bool) {
        guard value != asleep else { return }
        asleep = value
        for keeper in keepers.values {
            if value { keeper.suspend() } else { keeper.resume() }
        }
        if !value { slept = MonotonicClock.slept() }
        onSleep?(value)
        // What sleep closed is on disk before the machine sleeps.
        if value { writeAll() }
    }

    /// Whether the machine slept unannounced since the last look: then every target hears of it
    /// (the time asleep leaves the running values and outages, and the engines start afresh).
    func noticeSleep() {
        let now = MonotonicClock.slept()
        let jump = now > slept ? now - slept : .zero
        slept = now
        guard jump > Self.sleepJump, !asleep else { return }
        Log.info("the machine slept for \(jump.seconds) s (CLOCK_BOOTTIME jumped)")
        for keeper in keepers.values { keeper.slept(jump) }
        onSleep?(true)
        onSleep?(false)
    }

    private func tick() {
        noticeSleep()
        writeAll()
    }

    /// Hands what changed of every history to the helper, whole files up to `budget` bytes (the others wait,
    /// marked due, for the next call).
    private func writeAll(budget: Int = HistoryBook.wholeFilesPerTurn) {
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
