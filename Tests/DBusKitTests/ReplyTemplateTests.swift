@testable import DBusKit
import XCTest

/// A kept reply is copied for each call: every copy answers its own call and goes to its own caller, whoever
/// called before, and reads back whole through the wire format.
final class ReplyTemplateTests: XCTestCase {
    private func call(sender: String?, serial: UInt32) throws -> Message {
        let call = try Message.methodCall(
            destination: "org.netobserver.Monitor", path: "/org/netobserver/Monitor",
            interface: "org.freedesktop.DBus.Properties", member: "Get")
        if let sender { try call.setSender(sender) }
        call.setSerial(serial)
        return call
    }

    func testEveryCopyAnswersItsOwnCallAndCaller() throws {
        let body: [DBusValue] = [.variant(.variantMap([("Status", .string("wifi")), ("Interval", .uint32(1000))]))]
        let template = try ReplyTemplate(body)
        var serial: UInt32 = 40
        for sender in [":1.7", ":1.7", ":1.8", ":1.7", ":1.8", ":1.8", ":1.1234"] {
            serial += 1
            let reply = Message(taking: try XCTUnwrap(template.answer(try call(sender: sender, serial: serial).raw)))
            XCTAssertEqual(reply.kind, .methodReturn)
            XCTAssertEqual(reply.replySerial, serial)
            XCTAssertEqual(reply.destination, sender)
            XCTAssertEqual(try reply.arguments(), body)
            let parsed = try Message(wire: try reply.serialized())
            XCTAssertEqual(parsed.replySerial, serial)
            XCTAssertEqual(parsed.destination, sender)
            XCTAssertEqual(try parsed.arguments(), body)
        }
    }

    /// On a peer connection calls have no sender: the copies have no destination, before and after a bus caller.
    func testACallWithoutASenderGetsAReplyWithoutADestination() throws {
        let template = try ReplyTemplate([.variant(.string("wifi"))])
        let first = Message(taking: try XCTUnwrap(template.answer(try call(sender: nil, serial: 5).raw)))
        XCTAssertNil(first.destination)
        XCTAssertEqual(first.replySerial, 5)
        let addressed = Message(taking: try XCTUnwrap(template.answer(try call(sender: ":1.3", serial: 6).raw)))
        XCTAssertEqual(addressed.destination, ":1.3")
        let again = Message(taking: try XCTUnwrap(template.answer(try call(sender: nil, serial: 7).raw)))
        XCTAssertNil(again.destination)
        XCTAssertEqual(again.replySerial, 7)
        XCTAssertEqual(try again.arguments(), [.variant(.string("wifi"))])
    }

    /// A body libdbus would refuse is refused when the template is made, not when it is sent.
    func testABodyThatCannotBeMarshalledIsRefused() {
        XCTAssertThrowsError(try ReplyTemplate([.objectPath("not a path")]))
    }
}
