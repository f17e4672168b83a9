import DBusKit
import XCTest

final class DBusTypeTests: XCTestCase {
    func testSignaturesRoundTrip() {
        let signatures = [
            "y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "h", "v",
            "as", "aas", "a{sv}", "a{oa{sa{sv}}}", "(ii)", "(s(ba{sv}))", "a(yv)",
        ]
        for signature in signatures {
            let type = DBusType.parseSingle(signature: signature)
            XCTAssertNotNil(type, signature)
            XCTAssertEqual(type?.signature, signature)
        }
        XCTAssertEqual(DBusType.parse(signature: "sua{sv}")?.count, 3)
        XCTAssertEqual(DBusType.parse(signature: ""), [])
    }

    func testInvalidSignaturesAreRejected() {
        for bad in [
            "a", "(", ")", "()", "a{vs}", "{ss}", "a{s}", "z", "(i", "a{sss}", "s\0",
            String(repeating: "a", count: 33) + "s", String(repeating: "s", count: 256),
        ] {
            XCTAssertNil(DBusType.parse(signature: bad), bad)
        }
        XCTAssertNil(DBusType.parseSingle(signature: "ss"))
    }
}
