import MonitorService
import ServiceLog
import XCTest

/// What reaches the log from the network (a portal API's fields, a router's options) cannot drive the
/// terminal or the journal: one line, every control character written as `\xNN`.
final class LogLineTests: XCTestCase {
    func text(_ message: String, level: Log.Level? = nil) -> String {
        String(decoding: Log.line(message, level: level), as: UTF8.self)
    }

    func testControlCharactersAreWrittenAsEscapes() {
        XCTAssertEqual(
            text("portal API said \u{1b}[2J\u{1b}]0;owned\u{07}"), "portal API said \\x1b[2J\\x1b]0;owned\\x07\n")
        XCTAssertEqual(text("a\rb\tc\u{7f}d\u{0}e"), "a\\x0db\\x09c\\x7fd\\x00e\n")
        XCTAssertEqual(text("C1 \u{9b}31m and \u{85}"), "C1 \\xc2\\x9b31m and \\xc2\\x85\n")
        XCTAssertEqual(text("two\nlines"), "two lines\n", "one line per event")
        XCTAssertEqual(text("café 東京 ✓ ©"), "café 東京 ✓ ©\n", "printable text is left as it is")
        XCTAssertEqual(text("x", level: .warning), "<4>x\n")
    }

    func testEveryByteOfALineIsPrintableButItsEnd() {
        var all = ""
        for scalar in (0...0x2ff).compactMap(Unicode.Scalar.init) { all.unicodeScalars.append(scalar) }
        let line = Log.line(all, level: nil)
        XCTAssertEqual(line.last, 0x0a)
        for byte in line.dropLast() {
            XCTAssertFalse(byte < 0x20 || byte == 0x7f, "control byte \(byte) reached the log")
        }
        let decoded = String(decoding: line, as: UTF8.self)
        for scalar in decoded.unicodeScalars {
            XCTAssertFalse((0x80...0x9f).contains(scalar.value), "C1 control \(scalar.value) reached the log")
        }
    }
}
