import DaemonWorlds
import XCTest

final class HostNameTests: XCTestCase {
    func testAccepted() {
        let label63 = String(repeating: "a", count: 63)
        let name253 = [label63, label63, label63, String(repeating: "b", count: 61)].joined(separator: ".")
        XCTAssertEqual(name253.utf8.count, 253)
        for host in [
            "one.one.one.one", "localhost", "example.org.", "a", "x-y.z9", "1.example", "xn--bcher-kva.example",
            label63, name253, name253 + ".", "198.18.0.1", "0.0.0.0", "255.255.255.255",
            "::1", "::", "fd00::1", "fe80::1%eth0", "fe80::1%veth_c-0.1", "2001:db8::ffff:198.18.0.1",
            "1:2:3:4:5:6:7:8", "fe80::1%" + String(repeating: "z", count: 15),
        ] {
            XCTAssertTrue(HostName.isValid(host), host)
        }
    }

    func testRejected() {
        let label63 = String(repeating: "a", count: 63)
        let name254 = [label63, label63, label63, String(repeating: "b", count: 62)].joined(separator: ".")
        for host in [
            "", " ", "exa mple.org", "example..org", ".example", "example.org..", "-a.example", "a-.example",
            String(repeating: "a", count: 64), name254, "ex_ample.org", "exämple.org", "a\0b", "a\nb",
            "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "123", "example.123",
            ":::1", "1::2::3", "1:2:3:4:5:6:7:8:9", "fe80::1%", "fe80::1%" + String(repeating: "z", count: 16),
            "fe80::1%a b", "gggg::1", "[::1]", "198.18.0.1%eth0",
        ] {
            XCTAssertFalse(HostName.isValid(host), host.debugDescription)
        }
    }
}
