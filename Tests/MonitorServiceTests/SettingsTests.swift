@testable import MonitorService
import ProbeRules
import TestTime
import Timekeeping
import XCTest

/// Every writable property at its bounds: the value in range is kept, the
/// ones outside are refused with a message naming the property and range.
final class SettingsTests: XCTestCase {
    func testDefaults() {
        let settings = MonitorSettings()
        XCTAssertEqual(settings.host, "one.one.one.one")
        XCTAssertEqual(settings.interval, 1000)
        XCTAssertEqual(settings.timeout, 1000)
        XCTAssertEqual(settings.failureThreshold, 2)
        XCTAssertEqual(settings.recoveryThreshold, 1)
        XCTAssertEqual(settings.family, .any)
    }

    func testNumericBounds() throws {
        let cases: [(MonitorSettings.Key, UInt32, UInt32, String)] = [
            (.interval, 100, 3_600_000, "100–3600000 ms"),
            (.timeout, 10, 60_000, "10–60000 ms"),
            (.failureThreshold, 1, 100, "1–100"),
            (.recoveryThreshold, 1, 100, "1–100"),
        ]
        for (key, low, high, range) in cases {
            var settings = MonitorSettings()
            try settings.set(key, number: low)
            XCTAssertEqual(settings.text(key), String(low))
            try settings.set(key, number: high)
            XCTAssertEqual(settings.text(key), String(high))
            for bad in [low - 1, high + 1, 0, UInt32.max] where !(low...high).contains(bad) {
                var copy = settings
                XCTAssertThrowsError(try copy.set(key, number: bad)) { error in
                    let message = (error as? SettingError)?.message ?? ""
                    XCTAssertTrue(message.contains(key.name) && message.contains(range), message)
                }
                XCTAssertEqual(copy, settings, "unchanged after a refused value")
            }
        }
    }

    func testTextForms() throws {
        var settings = MonitorSettings()
        try settings.set(.family, text: "ipv6")
        XCTAssertEqual(settings.family, .ipv6)
        try settings.set(.host, text: "fd00::2")
        XCTAssertEqual(settings.host, "fd00::2")
        try settings.set(.interval, text: "250")
        XCTAssertEqual(settings.interval, 250)
        XCTAssertEqual(settings.evidence, .probes, "probes by default")
        try settings.set(.evidence, text: "traffic")
        XCTAssertEqual(settings.evidence, .traffic)
        XCTAssertEqual(settings.text(.evidence), "traffic")
        for (key, text) in [
            (MonitorSettings.Key.family, "IPv4"), (.family, ""), (.host, "bad host"), (.host, ""),
            (.interval, "-1"), (.interval, "1e3"), (.timeout, ""), (.evidence, "Traffic"), (.evidence, ""),
            (.evidence, "probes\n"),
        ] {
            var copy = settings
            XCTAssertThrowsError(try copy.set(key, text: text, name: "--x")) { error in
                XCTAssertTrue((error as? SettingError)?.message.hasPrefix("--x") == true)
            }
            XCTAssertEqual(copy, settings)
        }
    }

    /// INTERFACE.md "Quiet by default": Probing is adaptive or steady, IdleInterval 1000–3600000 ms; both reach the
    /// probe settings, round-trip as the state file keeps them, and a bad value names the property and what it
    /// accepts, changing nothing.
    func testProbingAndIdleInterval() throws {
        var settings = MonitorSettings()
        XCTAssertEqual(settings.probing, .steady, "steady until the tests that count in Intervals are pinned to it")
        XCTAssertEqual(settings.idleInterval, 60_000)
        try settings.set(.probing, text: "adaptive")
        try settings.set(.idleInterval, text: "3000")
        XCTAssertEqual(settings.configuration.probe.probing, .adaptive)
        XCTAssertEqual(settings.configuration.probe.idleIntervalMilliseconds, 3000)
        XCTAssertEqual(settings.text(.probing), "adaptive")
        XCTAssertEqual(settings.text(.idleInterval), "3000")
        XCTAssertEqual(MonitorSettings.Key.probing.flag, "--probing")
        XCTAssertEqual(MonitorSettings.Key.idleInterval.flag, "--idle-interval")
        XCTAssertEqual(MonitorSettings.Key.idleInterval.part, .probe(timeoutChanged: false))
        let restored = MonitorSettings().applying([.probing: "adaptive", .idleInterval: "3000"]).settings
        XCTAssertEqual(restored, settings)
        for (key, text, says) in [
            (MonitorSettings.Key.probing, "Adaptive", "Probing: 'Adaptive' is not valid (accepted: adaptive, steady)"),
            (.probing, "", "Probing: '' is not valid (accepted: adaptive, steady)"),
            (.idleInterval, "999", "IdleInterval: 999 is out of range (accepted: 1000–3600000 ms)"),
            (.idleInterval, "3600001", "IdleInterval: 3600001 is out of range (accepted: 1000–3600000 ms)"),
            (.idleInterval, "1e3", "IdleInterval: '1e3' is not a number (accepted: 1000–3600000 ms)"),
        ] {
            var copy = settings
            XCTAssertThrowsError(try copy.set(key, text: text)) { error in
                XCTAssertEqual((error as? SettingError)?.message, says)
            }
            XCTAssertEqual(copy, settings)
        }
    }

    /// SecureCheckURL has CheckURL's rules with https; CheckEcho is true or false; both round-trip as the state file keeps them.
    func testThePortalTruthSettings() throws {
        var settings = MonitorSettings()
        XCTAssertEqual(settings.secureCheckURL, "")
        XCTAssertFalse(settings.checkEcho)
        try settings.set(.secureCheckURL, text: "https://check.example:8443/generate_204")
        try settings.set(.checkEcho, text: "true")
        XCTAssertEqual(settings.text(.secureCheckURL), "https://check.example:8443/generate_204")
        XCTAssertEqual(settings.text(.checkEcho), "true")
        XCTAssertFalse(settings.secureCheckURLMayPointInward)
        let restored = MonitorSettings().applying([.secureCheckURL: settings.text(.secureCheckURL), .checkEcho: "true"])
            .settings
        XCTAssertEqual(restored.secureCheckURL, settings.secureCheckURL)
        XCTAssertTrue(restored.checkEcho)
        for (key, text) in [
            (MonitorSettings.Key.secureCheckURL, "http://check.example/"), (.secureCheckURL, "https://"),
            (.secureCheckURL, "https://127.0.0.1/"), (.secureCheckURL, "https://[fe80::1]/"),
            (.secureCheckURL, "https://user@check.example/"), (.checkEcho, "yes"), (.checkEcho, ""),
        ] {
            var copy = settings
            XCTAssertThrowsError(try copy.set(key, text: text), "\(key) \(text)")
            XCTAssertEqual(copy, settings)
        }
        // The command line may name any address.
        try settings.set(.secureCheckURL, text: "https://127.0.0.1:8443/204", fromAdministrator: true)
        XCTAssertTrue(settings.secureCheckURLMayPointInward)
        XCTAssertEqual(MonitorSettings.Key.checkEcho.property.type, .boolean)
    }

    func testControlCharactersAreEscapedInMessages() {
        var settings = MonitorSettings()
        XCTAssertThrowsError(try settings.set(.host, text: "a\u{1b}[31m")) { error in
            XCTAssertEqual((error as? SettingError)?.message.contains("\\x1b[31m"), true)
        }
    }
}
