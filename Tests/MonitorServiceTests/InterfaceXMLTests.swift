import DBusKit
import Foundation
import MonitorContract
import MonitorService
import XCTest

/// dbus/org.netobserver.Monitor.xml is the interface as the daemon introspects it.
final class InterfaceXMLTests: XCTestCase {
    func testShippedXMLMatchesTheDeclaration() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let shipped = try String(
            contentsOf: root.appendingPathComponent("dbus/org.netobserver.Monitor.xml"), encoding: .utf8)
        let model = MonitorModel(settings: MonitorSettings())
        let declaration = MonitorInterface.declaration(
            model: model, check: { _ throws(DBusError) in .later },
            wait: { _ throws(DBusError) in .later }, getHistory: { _ throws(DBusError) in .later },
            persist: { _, _ in .later })
        XCTAssertEqual(shipped, Introspection.document(interfaces: [declaration], children: []))
    }

    /// The contract against the shipped XML (the file reviewed against INTERFACE.md), and the
    /// daemon's declaration against the contract: names, order, types, access, change modes.
    func testEveryPropertyOfTheContractIsDeclaredWithItsTypeAndAccess() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let shipped = try String(
            contentsOf: root.appendingPathComponent("dbus/org.netobserver.Monitor.xml"), encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"<property name="(\w+)" type="([^"]+)" access="(\w+)""#)
        let inXML = pattern.matches(in: shipped, range: NSRange(shipped.startIndex..., in: shipped)).map { match in
            (1...3).map { String(shipped[Range(match.range(at: $0), in: shipped)!]) }
        }
        XCTAssertEqual(inXML.map { $0[0] }, MonitorContract.Property.allCases.map(\.name))
        for (row, property) in zip(inXML, MonitorContract.Property.allCases) {
            XCTAssertEqual(row[1], property.type.signature, property.name)
            XCTAssertEqual(row[2], property.access.rawValue, property.name)
        }

        let model = MonitorModel(settings: MonitorSettings())
        let declaration = MonitorInterface.declaration(
            model: model, check: { _ throws(DBusError) in .later },
            wait: { _ throws(DBusError) in .later }, getHistory: { _ throws(DBusError) in .later },
            persist: { _, _ in .later })
        XCTAssertEqual(declaration.properties.map(\.name), MonitorContract.Property.allCases.map(\.name))
        for property in MonitorContract.Property.allCases {
            let declared = declaration.property(named: property.name)
            XCTAssertEqual(declared?.type, property.type, property.name)
            XCTAssertEqual(declared?.access, property.access, property.name)
            XCTAssertEqual(declared?.changeMode, property.changeMode, property.name)
            XCTAssertEqual(declared?.get().type, property.type, "\(property.name) getter returns its declared type")
        }
        XCTAssertEqual(
            MonitorContract.Property.allCases.filter { $0.changeMode == .quiet },
            [
                .roundTripTime, .packetLoss, .probesSent, .probesAnswered,
                .traffic, .probesSkipped,
                .roundTripTime4, .roundTripTime6, .portalSecondsRemaining,
                .timeInState, .dnsRoundTripTime,
            ])
        XCTAssertEqual(declaration.methods.map(\.name), MonitorContract.Method.allCases.map(\.name))
        XCTAssertEqual(declaration.signals.map(\.name), MonitorContract.Signal.allCases.map(\.name))
    }
}
