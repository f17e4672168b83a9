import NetAddress
import XCTest

final class AddressBytesTests: XCTestCase {
    func testTheBytesAreThoseGivenInOrder() {
        var random = SystemRandomNumberGenerator()
        for count in [0, 1, 4, 7, 8, 9, 15, 16] {
            let given = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let bytes = AddressBytes(given)
            XCTAssertEqual(bytes.count, count)
            XCTAssertEqual(Array(bytes), given)
            XCTAssertEqual(AddressBytes(given), bytes)
            XCTAssertEqual(AddressBytes(given).hashValue, bytes.hashValue)
        }
    }

    func testAByteWrittenChangesOnlyItself() {
        var bytes = AddressBytes(repeating: 0xAA, count: 16)
        for position in [0, 7, 8, 15] {
            bytes[position] = UInt8(position)
            XCTAssertEqual(bytes[position], UInt8(position))
        }
        XCTAssertEqual(
            Array(bytes), [0, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 7, 8, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 15])
    }

    func testLengthTellsAddressesApart() {
        XCTAssertNotEqual(AddressBytes([0, 0, 0, 0]), AddressBytes(repeating: 0, count: 16), "0.0.0.0 is not ::")
        XCTAssertNotEqual(IPAddress.v4([198, 18, 0, 1]), IPAddress.v4([198, 18, 0, 2]))
        XCTAssertEqual(IPAddress(bytes: [198, 18, 0, 1]), .v4([198, 18, 0, 1]))
        XCTAssertEqual(
            IPAddress(bytes: AddressBytes(repeating: 0, count: 16)), .v6(AddressBytes(repeating: 0, count: 16)))
        XCTAssertNil(IPAddress(bytes: [1, 2, 3]))
    }

    func testPiecesAreReplacedAsInAnArray() {
        var bytes: AddressBytes = [0x20, 0x01, 0x0d, 0xb8]
        bytes += [UInt8](repeating: 0, count: 12)
        XCTAssertEqual(bytes.count, 16)
        bytes.replaceSubrange(12..<16, with: [198, 18, 0, 1])
        XCTAssertEqual(IPAddress.v6(bytes).description, "2001:db8::c612:1")
        XCTAssertEqual(AddressBytes(bytes[12...]), [198, 18, 0, 1])
    }
}
