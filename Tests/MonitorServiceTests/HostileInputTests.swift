import DaemonWorlds
import Glibc
import MonitorContract
@testable import MonitorService
import NetAddress
import NetCore
import TestTime
import Timekeeping
import XCTest

/// INTERFACE.md "Hostile callers": the pure parts, each bound checked on its own.
final class HostileInputTests: XCTestCase {
    func testAHugeHostIsRefusedWithoutBeingSplit() {
        let huge = String(repeating: "1.", count: 2 << 20) + "1"
        XCTAssertFalse(HostName.isValid(huge))
        XCTAssertFalse(HostName.isIPv4Literal(huge))
        XCTAssertFalse(HostName.isIPv6Literal(String(repeating: ":", count: 1 << 20)))
        var settings = MonitorSettings()
        XCTAssertThrowsError(try settings.set(.host, text: huge)) { error in
            XCTAssertLessThan(
                (error as? SettingError)?.message.utf8.count ?? .max, 512, "the error quotes a bounded prefix")
        }
        XCTAssertEqual(settings.host, MonitorSettings().host)
    }

    func testInwardAddressesInEveryForm() throws {
        for text in [
            "127.0.0.1", "127.255.0.9", "0.0.0.0", "0.1.2.3", "169.254.0.1", "224.0.0.1", "239.1.1.1",
            "255.255.255.255", "::1", "::", "fe80::1", "febf::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.9.9",
        ] {
            XCTAssertTrue(try XCTUnwrap(IPAddress(text)).pointsInward, text)
        }
        for text in [
            "198.18.0.1", "8.8.8.8", "10.0.0.1", "192.168.1.1", "169.255.0.1", "223.255.255.255", "fd00::1",
            "2001:db8::1", "fec0::1", "::ffff:198.18.0.1", "::2",
        ] {
            XCTAssertFalse(try XCTUnwrap(IPAddress(text)).pointsInward, text)
        }
        // inet_aton's forms, which curl and getaddrinfo read as addresses.
        for text in ["0x7f000001", "2130706433", "127.1", "0177.0.0.1", "0x7f.1"] {
            XCTAssertEqual(IPAddress(lenientIPv4: text), IPAddress("127.0.0.1"), text)
        }
        XCTAssertNil(IPAddress(lenientIPv4: "check.example"))
    }

    /// An address of this machine (its LAN address, any form) is refused over D-Bus like loopback.
    func testCheckURLNamingAnAddressOfThisMachineIsRefused() throws {
        let own: (IPAddress) -> Bool = { $0.unmapped == IPAddress("198.18.0.2") }
        for url in ["http://198.18.0.2/", "http://198.18.0.2:8080/generate_204", "http://[::ffff:198.18.0.2]/"] {
            var settings = MonitorSettings()
            XCTAssertThrowsError(try settings.set(.checkURL, text: url, isThisMachine: own), url) { error in
                XCTAssertTrue(
                    (error as? SettingError)?.message.contains("this machine's own addresses") == true, "\(error)")
            }
            XCTAssertEqual(settings.checkURL, "")
            try settings.set(.checkURL, text: url, fromAdministrator: true, isThisMachine: own)
            XCTAssertEqual(settings.checkURL, url, "the administrator may")
        }
        var settings = MonitorSettings()
        try settings.set(.checkURL, text: "http://198.18.0.3/", isThisMachine: own)
        XCTAssertEqual(settings.checkURL, "http://198.18.0.3/")
    }

    func testCheckURLIntoThisMachineIsRefusedOverDBusButNotFromTheCommandLine() throws {
        for url in [
            "http://127.0.0.1/", "http://0x7f000001/", "http://0x7F000001:8080/x",
            "http://[::1]/", "http://[::ffff:127.0.0.1]:80/", "http://169.254.169.254/latest/meta-data",
            "http://0.0.0.0/", "http://224.0.0.251/", "http://[fe80::1]/", "http://[ff02::1]/",
        ] {
            var settings = MonitorSettings()
            XCTAssertThrowsError(try settings.set(.checkURL, text: url), url) { error in
                XCTAssertTrue(
                    (error as? SettingError)?.message.contains("points into this machine") == true, "\(error)")
            }
            XCTAssertEqual(settings.checkURL, "", "nothing changed for \(url)")
            try settings.set(.checkURL, text: url, fromAdministrator: true)
            XCTAssertEqual(settings.checkURL, url)
            XCTAssertTrue(settings.checkURLMayPointInward)
        }
        var settings = MonitorSettings()
        try settings.set(.checkURL, text: "http://check.example:8080/generate_204")
        XCTAssertFalse(settings.checkURLMayPointInward, "a name is judged by what it resolves to, at check time")
        try settings.set(.checkURL, text: "http://198.18.0.1/")
        XCTAssertEqual(CheckURLTarget("http://[fd00::1]:81/x"), CheckURLTarget("http://[fd00::1]:81/y"))
        let target = try XCTUnwrap(CheckURLTarget("http://check.example:8080/generate_204"))
        XCTAssertEqual(target.host, "check.example")
        XCTAssertEqual(target.port, 8080)
        XCTAssertNil(target.literal)
        XCTAssertEqual(CheckURLTarget("http://[fd00::1]/")?.port, 80)
        XCTAssertEqual(CheckURLTarget("http://[fd00::1]/")?.literal, IPAddress("fd00::1"))
    }

    func testTargetNumbersNeverWrap() throws {
        var template = Array("/tmp/netobserver-hostile-XXXXXX".utf8CString)
        let directory = String(cString: try XCTUnwrap(mkdtemp(&template)))
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let store = StateStore(directory: directory)
        try "NextTarget=4294967295\nTarget.4294967295.Host=198.18.0.1\nTarget.7.Host=198.18.0.7\n"
            .write(toFile: store.path, atomically: true, encoding: .utf8)
        let (state, problems) = store.loadState()
        XCTAssertEqual(state.added.map(\.number), [7])
        XCTAssertEqual(state.nextTarget, 8, "NextTarget past the last number is not believed")
        XCTAssertEqual(problems.count, 2, "\(problems)")
        try "NextTarget=1000000001\n".write(toFile: store.path, atomically: true, encoding: .utf8)
        XCTAssertEqual(store.loadState().state.nextTarget, 1_000_000_001, "the last number given out was 1,000,000,000")
    }

    func testTheWatchdogPeriodSaturates() throws {
        var socketPath = "/tmp/netobserver-notify-\(getpid())"
        let environment: [String: String] = ["NOTIFY_SOCKET": socketPath, "WATCHDOG_USEC": "18446744073709551615"]
        let notifier = try XCTUnwrap(SystemdNotifier { environment[$0] })
        XCTAssertEqual(notifier.watchdogPeriod, Duration(nanoseconds: .max) / 2)
        socketPath = ""
        let ordinary: [String: String] = ["NOTIFY_SOCKET": "/tmp/x", "WATCHDOG_USEC": "30000000"]
        XCTAssertEqual(SystemdNotifier { ordinary[$0] }?.watchdogPeriod, 15 * second)
    }

    func testAdditionsAreLimitedPerWindow() {
        var recent = RecentEvents(limit: 16, window: 10 * second)
        func allow(_ now: Instant) -> Bool {
            guard recent.hasRoom(now: now) else { return false }
            recent.record(now: now)
            return true
        }
        for i in 0..<16 { XCTAssertTrue(allow(UInt64(i) * ms)) }
        XCTAssertFalse(allow(5_000_000_000))
        XCTAssertFalse(allow(9_999_999_999))
        XCTAssertTrue(allow(10_000_000_000), "the first one left the window")
        XCTAssertFalse(allow(10_000_000_001))
    }

    /// Stored values are taken the one way every target takes them.
    func testStoredValuesAreAppliedOneWayForEveryTarget() {
        var base = MonitorSettings()
        base.interval = 500
        let stored: [MonitorSettings.Key: String] = [
            .host: "198.18.0.7", .interval: "250", .timeout: "5",
            .checkURL: "http://127.0.0.1/", .family: "ipv6",
        ]
        let (settings, kept, problems) = base.applying(stored, except: [.interval])
        XCTAssertEqual(settings.host, "198.18.0.7")
        XCTAssertEqual(settings.interval, 500, "a flagged key keeps the command line's value")
        XCTAssertEqual(settings.family, .ipv6)
        XCTAssertEqual(settings.timeout, 1000, "an invalid value changes nothing")
        XCTAssertEqual(settings.checkURL, "", "a stored CheckURL is a D-Bus one: never inward")
        XCTAssertEqual(Set(kept.keys), [.host, .interval, .family])
        XCTAssertEqual(problems.count, 2, "\(problems)")
        XCTAssertEqual(Set(settings.changedKeys(from: base)), [.host, .family])
    }
}
