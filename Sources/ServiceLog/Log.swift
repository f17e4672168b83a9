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
        var bytes = line(message, level: prefixLevels ? level : nil)
        // One write per line, so lines from concurrent writers never interleave.
        _ = Glibc.write(2, &bytes, bytes.count)
    }

    /// The bytes of one log line: `<N>` first when `level` is given, the message on one line (a newline
    /// becomes a space), and every other control character — C0, DEL and C1, which a terminal or the journal
    /// would act on — written as `\xNN`: text from the network (a portal's API, a router) reaches the log.
    public static func line(_ message: String, level: Level?) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(message.utf8.count + 5)
        if let level { bytes += "<\(level.rawValue)>".utf8 }
        var previous: UInt8 = 0
        for byte in message.utf8 {
            defer { previous = byte }
            if byte == UInt8(ascii: "\n") {
                bytes.append(UInt8(ascii: " "))
            } else if byte < 0x20 || byte == 0x7f {
                escape(byte, into: &bytes)
            } else if previous == 0xc2, (0x80...0x9f).contains(byte) {
                // A C1 control (U+0080–U+009F): its lead byte is already out, so both are written escaped.
                bytes.removeLast()
                escape(0xc2, into: &bytes)
                escape(byte, into: &bytes)
            } else {
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private static func escape(_ byte: UInt8, into bytes: inout [UInt8]) {
        let digits = Array("0123456789abcdef".utf8)
        bytes += [UInt8(ascii: "\\"), UInt8(ascii: "x"), digits[Int(byte >> 4)], digits[Int(byte & 0xf)]]
    }

    /// systemd sets JOURNAL_STREAM to "device:inode" of the stream it connected.
    private static func stderrIsJournal() -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return value == "\(info.st_dev):\(info.st_ino)"
    }
}
