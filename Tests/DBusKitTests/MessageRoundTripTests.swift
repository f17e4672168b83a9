@testable import DBusKit
import Foundation
import MonitorRules
import XCTest

/// Every type goes into a real libdbus message, through the wire format, and back.
final class MessageRoundTripTests: XCTestCase {
    private func roundTrip(
        _ values: [DBusValue], file: StaticString = #filePath, line: UInt = #line
    ) throws -> [DBusValue] {
        let message = try Message.signal(path: "/t", interface: "org.netobserver.Test", name: "T")
        try message.append(values)
        XCTAssertEqual(message.signature, values.map(\.type.signature).joined(), file: file, line: line)
        let bytes = try message.serialized()
        let parsed = try Message(wire: bytes)
        return try parsed.arguments()
    }

    func testBasicTypes() throws {
        let values: [DBusValue] = [
            .byte(0), .byte(255), .boolean(true), .boolean(false),
            .int16(.min), .int16(.max), .uint16(.max), .int32(.min), .int32(-1), .uint32(.max),
            .int64(.min), .int64(.max), .uint64(.max), .double(-1.5), .double(.greatestFiniteMagnitude),
            .string(""), .string("héllo wörld ✓ 🌍"), .objectPath("/"), .objectPath("/org/netobserver/Monitor"),
            .signature(""), .signature("a{sv}(ii)"),
        ]
        XCTAssertEqual(try roundTrip(values), values)
    }

    func testContainers() throws {
        let values: [DBusValue] = [
            .array(.string, []),
            .array(.int32, [.int32(1), .int32(2), .int32(3)]),
            .array(.array(.byte), [.array(.byte, [.byte(1)]), .array(.byte, [])]),
            .dictionary(key: .string, value: .variant, []),
            .variantMap([("Status", .string("wifi")), ("Interval", .uint32(1000)), ("Loss", .double(0.25))]),
            .dictionary(
                key: .uint32, value: .array(.string),
                [DBusDictEntry(key: .uint32(7), value: .stringArray(["a", "b"]))]),
            .structure([.int32(1), .string("x"), .structure([.boolean(true), .variant(.objectPath("/a"))])]),
            .variant(.variant(.array(.structure([.byte, .string]), [.structure([.byte(1), .string("one")])]))),
            .array(.variant, [.variant(.string("s")), .variant(.uint64(9)), .variant(.variantMap([]))]),
        ]
        XCTAssertEqual(try roundTrip(values), values)
    }

    func testUnixFDIsRefusedWithoutDuplicatingIt() throws {
        let before = openDescriptors()
        let message = try Message.signal(path: "/t", interface: "org.netobserver.Test", name: "T")
        try message.append([.unixFD(0)])
        XCTAssertThrowsError(try message.arguments()) { error in
            XCTAssertEqual((error as? DBusError)?.name, "org.freedesktop.DBus.Error.InvalidArgs")
        }
        XCTAssertEqual(openDescriptors(), before + 1, "only the message's own copy")
        _ = message
    }

    func testValuesLibdbusWouldAbortOnAreRejected() throws {
        let bad: [DBusValue] = [
            .string("nul\0inside"),
            .objectPath("no/leading/slash"), .objectPath("/trailing/"), .objectPath("/double//slash"),
            .objectPath("/bad-char"),
            .signature("a{vs}"), .signature("(("),
            .array(.string, [.int32(1)]),
            .dictionary(key: .variant, value: .string, []),
            .dictionary(key: .string, value: .string, [DBusDictEntry(key: .string("k"), value: .int32(1))]),
            .structure([]),
            .variant(.string("x\0y")),
        ]
        for value in bad {
            let message = try Message.signal(path: "/t", interface: "org.netobserver.Test", name: "T")
            XCTAssertThrowsError(try message.append([value]), "\(value)") { error in
                XCTAssertEqual((error as? DBusError)?.name, "org.freedesktop.DBus.Error.InvalidArgs")
            }
            XCTAssertEqual(message.signature, "", "nothing half-appended for \(value)")
        }
    }

    func testMalformedWireBytesAreAnError() {
        XCTAssertThrowsError(try Message(wire: []))
        XCTAssertThrowsError(try Message(wire: Array(repeating: 0xFF, count: 64)))
        if let good = try? Message.signal(path: "/t", interface: "org.netobserver.Test", name: "T"),
            (try? good.append([.string("abc")])) != nil, var bytes = try? good.serialized()
        {
            bytes[bytes.count - 2] = 0xFF // inside the string: invalid UTF-8
            XCTAssertThrowsError(try Message(wire: bytes))
            XCTAssertThrowsError(try Message(wire: Array(bytes.dropLast(3))))
        } else {
            XCTFail("could not build a message")
        }
    }

    func testInvalidNamesAreRejectedBeforeLibdbus() {
        XCTAssertThrowsError(try Message.signal(path: "bad", interface: "org.x.Y", name: "S"))
        XCTAssertThrowsError(try Message.signal(path: "/ok", interface: "noDots", name: "S"))
        XCTAssertThrowsError(try Message.signal(path: "/ok", interface: "org.x.Y", name: "9bad"))
        XCTAssertThrowsError(try Message.methodCall(destination: "bad..name", path: "/", interface: nil, member: "M"))
    }

    func testErrorReplyStripsNulAndFixesBadNames() throws {
        let call = try Message.methodCall(destination: "org.x.Y", path: "/", interface: "org.x.Y", member: "M")
        // A method call needs a serial before libdbus will build a reply to it.
        _ = try call.serialized()
        let reply = try XCTUnwrap(call.makeError(DBusError(name: "not an error name", message: "a\0b")))
        XCTAssertEqual(reply.errorName, "org.freedesktop.DBus.Error.Failed")
        XCTAssertEqual(try reply.arguments(), [.string("ab")])
    }
}

/// How many descriptors this process has open.
func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}
