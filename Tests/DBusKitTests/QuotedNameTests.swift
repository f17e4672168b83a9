@testable import DBusKit
import MonitorRules
import XCTest

/// "Nothing a caller sends is echoed in full": names in error replies are cut and escaped.
final class QuotedNameTests: XCTestCase {
    func testLongNamesAreCutAt255BytesAndOddBytesEscaped() {
        let huge = [CChar](repeating: 0x41, count: 30 << 20) + [0]
        let quoted = huge.withUnsafeBufferPointer { quotedName($0.baseAddress!) }
        XCTAssertEqual(quoted, String(repeating: "A", count: 255) + "…")
        let odd: [UInt8] = [0x61, 0x1B, 0x5B, 0x32, 0x4A, 0x0A, 0x5C, 0xC3, 0xA9, 0x00]
        let escaped = odd.map { CChar(bitPattern: $0) }.withUnsafeBufferPointer { quotedName($0.baseAddress!) }
        XCTAssertEqual(escaped, "a\\x1b[2J\\x0a\\x5c\\xc3\\xa9")
        XCTAssertEqual("short".withCString { quotedName($0) }, "short")
    }

    func testErrorTextsAndRepliesAreBounded() throws {
        let call = try Message.methodCall(destination: nil, path: "/x", interface: nil, member: "M")
        call.setSerial(7)
        let long = String(repeating: "é", count: 100_000)
        let reply = try XCTUnwrap(Message.error(answering: call.raw, .invalidArgs(long)))
        let text = try XCTUnwrap(reply.firstStringArgument)
        XCTAssertLessThanOrEqual(text.utf8.count, Message.maximumErrorText + 3)
        XCTAssertTrue(text.hasSuffix("é…"), "cut at a character boundary")
        XCTAssertGreaterThan(
            DBusValue.string(String(repeating: "x", count: 70_000)).wireSizeBound, DBusMethod.defaultReplyLimit)
        XCTAssertLessThan(
            DBusValue.variantMap([("Status", .string("none")), ("Interval", .uint32(1000))]).wireSizeBound, 1_024)
    }
}
