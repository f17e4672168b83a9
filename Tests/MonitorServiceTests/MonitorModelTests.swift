import MonitorContract
import MonitorRules
import MonitorService
import TestTime
import Timekeeping
import XCTest

final class MonitorModelTests: XCTestCase {
    func testStartsUnknownAndSaysWhy() {
        let model = MonitorModel(settings: MonitorSettings(), now: 42)
        XCTAssertEqual(model.state.status, .unknown)
        XCTAssertFalse(model.state.reachable)
        XCTAssertEqual(model.state.reason, MonitorModel.noEngineReason)
        XCTAssertEqual(model.state.lastChange, 42)
    }

    func testUpdateReportsExactlyWhatChanged() {
        let model = MonitorModel(settings: MonitorSettings(), now: 1)
        var reports: [([MonitorContract.Property], Bool)] = []
        model.onChange = { reports.append(($0, $1)) }
        model.update(now: 5) {
            $0.status = .ethernet; $0.interface = "veth0"
        }
        XCTAssertEqual(reports.map(\.0), [[.status, .reachable, .interface, .reason, .lastChange]])
        XCTAssertEqual(reports.map(\.1), [true])
        XCTAssertEqual(model.state.lastChange, 5)
        XCTAssertEqual(model.state.reason, "", "connected means no reason")
        model.update(now: 6) { $0.roundTripTime = 900 }
        XCTAssertEqual(reports.last?.0, [.roundTripTime])
        XCTAssertEqual(reports.last?.1, false)
        XCTAssertEqual(model.state.lastChange, 5, "only a Status change moves LastChange")
        let count = reports.count
        model.update(now: 7) { $0.interface = "veth0" }
        XCTAssertEqual(reports.count, count, "no change, no report")
    }

    func testNewHostResetsTheVerdictAndAnnouncesIt() throws {
        let model = MonitorModel(settings: MonitorSettings())
        model.update {
            $0.status = .wifi; $0.address = "198.18.0.1"; $0.roundTripTime = 500; $0.packetLoss = 0.1
        }
        var reports: [([MonitorContract.Property], Bool)] = []
        var changedKeys: [MonitorSettings.Key] = []
        model.onChange = { reports.append(($0, $1)) }
        model.onSettingChanged = { changedKeys.append($0) }
        try model.set(.host) { (s: inout MonitorSettings) throws(SettingError) in try s.set(.host, text: "example.org")
        }
        XCTAssertEqual(model.settings.host, "example.org")
        XCTAssertEqual(model.state.status, .unknown)
        XCTAssertEqual(model.state.address, "")
        XCTAssertEqual(model.state.roundTripTime, 0)
        XCTAssertEqual(model.state.packetLoss, 0)
        XCTAssertEqual(changedKeys, [.host])
        XCTAssertEqual(reports.map(\.1), [true, false], "StatusChanged once, with the reset; then Host")
        XCTAssertEqual(reports.last?.0, [.host])

        // Still unknown, but a new Host is a new {status, host} pair: announced again.
        reports = []
        try model.set(.host) { (s: inout MonitorSettings) throws(SettingError) in try s.set(.host, text: "example.net")
        }
        XCTAssertEqual(reports.map(\.1), [true, false])

        // The same value again: nothing at all.
        reports = []
        try model.set(.host) { (s: inout MonitorSettings) throws(SettingError) in try s.set(.host, text: "example.net")
        }
        XCTAssertTrue(reports.isEmpty)
    }

    func testRefusedSetChangesNothing() {
        let model = MonitorModel(settings: MonitorSettings())
        var reports = 0
        model.onChange = { _, _ in reports += 1 }
        XCTAssertThrowsError(
            try model.set(.interval) { (s: inout MonitorSettings) throws(SettingError) in
                try s.set(.interval, number: 99)
            })
        XCTAssertEqual(model.settings, MonitorSettings())
        XCTAssertEqual(reports, 0)
    }

    func testIntervalChangeKeepsTheVerdict() throws {
        let model = MonitorModel(settings: MonitorSettings())
        model.update { $0.status = .ethernet }
        try model.set(.interval) { (s: inout MonitorSettings) throws(SettingError) in try s.set(.interval, number: 500)
        }
        XCTAssertEqual(model.state.status, .ethernet)
    }
}
