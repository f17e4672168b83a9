import CLinux
import Glibc
import NetCore
import Reachability
import ReachabilityRules
import XCTest

/// Classification on fake sysfs trees: these machines have no wifi or modem.
final class ClassifierTests: XCTestCase {
    private var root = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/netobserver-sysfs-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp") }
        root = String(cString: made)
    }

    override func tearDown() {
        _ = root.withCString { path in
            system("rm -rf '\(String(cString: path))'")
        }
    }

    private func make(_ relative: String, file: String? = nil, link: String? = nil) {
        let path = root + "/" + relative
        let parent = String(path[..<path.lastIndex(of: "/")!])
        _ = system("mkdir -p '\(parent)'")
        if let link {
            symlink(link, path)
        } else if let file {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = file.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        } else {
            mkdir(path, 0o755)
        }
    }

    private func kind(_ name: String, type: Int32 = ARPHRD_ETHER, kind: String? = nil) -> InterfaceKind {
        InterfaceClassifier(sysfsRoot: root).classify(
            Link(index: 3, name: name, flags: 0, type: UInt16(type), kind: kind))
    }

    func testWifi() {
        make("class/net/wlan0/wireless")
        make("class/net/wlp2s0/phy80211", link: "../../ieee80211/phy0")
        make("class/net/wl1/uevent", file: "DEVTYPE=wlan\nINTERFACE=wl1\n")
        XCTAssertEqual(kind("wlan0"), .wifi)
        XCTAssertEqual(kind("wlp2s0"), .wifi)
        XCTAssertEqual(kind("wl1"), .wifi)
    }

    func testCellular() {
        make("class/net/wwan0/uevent", file: "DEVTYPE=wwan\nINTERFACE=wwan0\n")
        make("class/net/usb0/device/driver", link: "../../../bus/usb/drivers/qmi_wwan")
        make("class/net/mbim0/device/driver", link: "/sys/bus/usb/drivers/cdc_mbim")
        XCTAssertEqual(kind("wwan0", type: ARPHRD_NONE), .cellular)
        XCTAssertEqual(kind("usb0"), .cellular)
        XCTAssertEqual(kind("mbim0"), .cellular)
        XCTAssertEqual(kind("rmnet_data0", type: ARPHRD_NONE, kind: "rmnet"), .cellular)
    }

    func testVPN() {
        make("class/net/tap0/tun_flags", file: "0x1002\n")
        XCTAssertEqual(kind("tap0"), .vpn, "tap is ARPHRD_ETHER but a tun/tap device")
        XCTAssertEqual(kind("tun0", type: ARPHRD_NONE, kind: "tun"), .vpn)
        XCTAssertEqual(kind("wg0", type: ARPHRD_NONE, kind: "wireguard"), .vpn)
        XCTAssertEqual(kind("ppp0", type: ARPHRD_PPP), .vpn)
        XCTAssertEqual(kind("gre1", type: ARPHRD_IPGRE, kind: "gre"), .vpn)
        XCTAssertEqual(kind("sit1", type: ARPHRD_SIT, kind: "sit"), .vpn)
        XCTAssertEqual(kind("ipip1", type: ARPHRD_TUNNEL, kind: "ipip"), .vpn)
    }

    func testEthernetAndOther() {
        make("class/net/eth0/uevent", file: "INTERFACE=eth0\n")
        XCTAssertEqual(kind("eth0"), .ethernet)
        XCTAssertEqual(kind("veth0", kind: "veth"), .ethernet)
        XCTAssertEqual(kind("br0", kind: "bridge"), .ethernet)
        XCTAssertEqual(kind("bond0", kind: "bond"), .ethernet)
        XCTAssertEqual(kind("eth0.5", kind: "vlan"), .ethernet)
        XCTAssertEqual(kind("lo", type: ARPHRD_LOOPBACK), .other)
        XCTAssertEqual(kind("ib0", type: ARPHRD_INFINIBAND), .other)
    }

    func testNamesCannotEscapeTheSysfsRoot() {
        make("wireless")
        XCTAssertEqual(kind(".."), .ethernet)
        XCTAssertEqual(kind("a/../../x"), .ethernet)
    }
}
