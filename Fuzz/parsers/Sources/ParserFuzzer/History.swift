import MonitorRules

// libFuzzer entry for the history file (the state directory's `history`): the strict reader, then the
// history it gives used as the service uses it, built by `make fuzz`.

func historyFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard var history = try? OutageHistoryFile.decode(bytes[...], minimumOutage: 1_000_000) else { return 0 }
    precondition(size <= OutageHistoryFile.maximumSize)
    precondition(history.outages.count <= OutageHistory.maximumOutages)
    history.observeStart(boot: 0)
    _ = history.observe(.full, blame: "", reason: "", boot: 1, real: history.began)
    _ = history.observe(.limited, blame: "host", reason: "fuzz", boot: 2, real: history.began &+ 1)
    _ = history.suspend(boot: 3_000_000)
    history.resume(boot: 4_000_000, real: history.began &+ 4)
    _ = history.timeInState(boot: 5_000_000)
    _ = history.latest(Int(bytes.first ?? 0))
    // What it writes reads back the same.
    let text = OutageHistoryFile.encode(history)
    guard let back = try? OutageHistoryFile.decode(Array(text.utf8)[...], minimumOutage: 1_000_000) else {
        preconditionFailure("a history written is read back")
    }
    precondition(back.outages == history.outages)
    return 0
}
