import MonitorRules
import Timekeeping

// libFuzzer entry for the history file (the state directory's `history`): the strict reader, then the
// history it gives used as the service uses it, built by `make fuzz`.

func historyFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard var history = try? OutageHistoryFile.decode(bytes[...], minimumOutage: .seconds(1)) else { return 0 }
    precondition(size <= OutageHistoryFile.maximumSize)
    precondition(history.outages.count <= OutageHistory.maximumOutages)
    // The clocks read on from where the file left off (a began from a file may be the largest there is: then it stays).
    func real(_ microseconds: UInt64) -> WallTime {
        let (sum, overflow) = history.began.sinceEpoch.nanoseconds.addingReportingOverflow(microseconds * 1_000)
        return overflow ? history.began : WallTime(sinceEpoch: .nanoseconds(sum))
    }
    func boot(_ microseconds: UInt64) -> BootTime { BootTime(sinceBoot: .microseconds(microseconds)) }
    history.observeStart(boot: boot(0))
    _ = history.observe(.full, blame: nil, reason: "", boot: boot(1), real: history.began)
    _ = history.observe(.limited, blame: .host, reason: "fuzz", boot: boot(2), real: real(1))
    _ = history.suspend(boot: boot(3_000_000))
    history.resume(boot: boot(4_000_000), real: real(4))
    _ = history.timeInState(boot: boot(5_000_000))
    _ = history.latest(Int(bytes.first ?? 0))
    // What it writes reads back the same.
    let text = OutageHistoryFile.encode(history)
    guard let back = try? OutageHistoryFile.decode(Array(text.utf8)[...], minimumOutage: .seconds(1)) else {
        preconditionFailure("a history written is read back")
    }
    precondition(back.outages == history.outages)
    return 0
}
