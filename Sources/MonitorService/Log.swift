import Glibc
import Synchronization

/// One line per event on stderr, with `<N>` syslog levels when stderr is the journal.
public enum Log {
    public enum Level: Int32, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    }

    private static let verboseFlag = Atomic<Bool>(false)
    private static let prefixLevels: Bool = stderrIsJournal()

    public static var verbose: Bool {
        get { verboseFlag.load(ordering: .relaxed) }
        set { verboseFlag.store(newValue, ordering: .relaxed) }
    }

    public static func error(_ message: String) { write(.error, message) }
    public static func warning(_ message: String) { write(.warning, message) }
    public static func notice(_ message: String) { write(.notice, message) }
    public static func info(_ message: String) { write(.info, message) }
    public static func debug(_ message: String) { if verbose { write(.debug, message) } }

    private static func write(_ level: Level, _ message: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(message.utf8.count + 4)
        if prefixLevels { bytes += "<\(level.rawValue)>".utf8 }
        // A message is one line: newlines inside it become spaces (bytes, not Characters: no segmentation).
        for byte in message.utf8 { bytes.append(byte == UInt8(ascii: "\n") ? UInt8(ascii: " ") : byte) }
        bytes.append(UInt8(ascii: "\n"))
        // One write per line, so lines from concurrent writers never interleave.
        _ = Glibc.write(2, &bytes, bytes.count)
    }

    /// systemd sets JOURNAL_STREAM to "device:inode" of the stream it connected.
    private static func stderrIsJournal() -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return value == "\(info.st_dev):\(info.st_ino)"
    }
}
