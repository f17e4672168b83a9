import DBusKit
import MonitorService
import XCTest

/// dbus/org.netobserver.Monitor.xml is the interface as the daemon introspects it.
final class InterfaceXMLTests: XCTestCase {
    func testShippedXMLMatchesTheDeclaration() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try String(contentsOf: root.appendingPathComponent("dbus/org.netobserver.Monitor.xml"), encoding: .utf8)
        let model = MonitorModel(settings: MonitorSettings())
        let declaration = MonitorInterface.declaration(model: model, check: { _ throws(DBusError) in .later },
                                                       wait: { _ throws(DBusError) in .later }, persist: { _, _ in .later })
        XCTAssertEqual(shipped, Introspection.document(interfaces: [declaration], children: []))
    }

    func testEveryPropertyOfTheSpecIsDeclaredWithItsTypeAndAccess() {
        let model = MonitorModel(settings: MonitorSettings())
        let declaration = MonitorInterface.declaration(model: model, check: { _ throws(DBusError) in .later },
                                                       wait: { _ throws(DBusError) in .later }, persist: { _, _ in .later })
        let expected: [(String, String, PropertyAccess)] = [
            ("Status", "s", .read), ("Host", "s", .readwrite), ("Reachable", "b", .read), ("Interface", "s", .read),
            ("Address", "s", .read), ("Reason", "s", .read), ("RoundTripTime", "t", .read), ("PacketLoss", "d", .read),
            ("LastChange", "t", .read), ("Interval", "u", .readwrite), ("Timeout", "u", .readwrite),
            ("FailureThreshold", "u", .readwrite), ("RecoveryThreshold", "u", .readwrite), ("AddressFamily", "s", .readwrite),
        ]
        XCTAssertEqual(declaration.properties.map(\.name), expected.map(\.0))
        for (name, signature, access) in expected {
            let property = declaration.property(named: name)
            XCTAssertEqual(property?.type.signature, signature, name)
            XCTAssertEqual(property?.access, access, name)
            XCTAssertEqual(property?.get().type.signature, signature, "\(name) getter returns its declared type")
        }
        XCTAssertEqual(declaration.property(named: "RoundTripTime")?.changeMode, .quiet)
        XCTAssertEqual(declaration.property(named: "PacketLoss")?.changeMode, .quiet)
    }
}
