import Cellular
import DBusKit
import MonitorRules
import MonitorService
import NetAddress
import NetCore
import Probe
import ProbeRules
import Reachability
import ReachabilityRules
import XCTest

/// The ModemManager / NetworkManager knowledge, pure: the generation mapping, the
/// table built from the services' objects, and how StatusRules uses it.
final class LinkFactsTests: XCTestCase {
    func testEveryAccessTechnologyMapsToItsGenerationAndTheHighestWins() {
        let expected: [(UInt32, String?)] = [
            (0, nil), (1 << 0, nil), // unknown, POTS
            (1 << 1, "2g"), (1 << 2, "2g"), (1 << 3, "2g"), (1 << 4, "2g"), (1 << 10, "2g"), // GSM … EDGE, 1xRTT
            (1 << 5, "3g"), (1 << 6, "3g"), (1 << 7, "3g"), (1 << 8, "3g"), (1 << 9, "3g"), // UMTS … HSPA+
            (1 << 11, "3g"), (1 << 12, "3g"), (1 << 13, "3g"), // EV-DO 0, A, B
            (1 << 14, "4g"), (1 << 16, "4g"), (1 << 17, "4g"), // LTE, Cat-M, NB-IoT
            (1 << 15, "5g"), (1 << 14 | 1 << 15, "5g"), // 5GNR, LTE + 5GNR
            (1 << 4 | 1 << 9, "3g"), (1 << 1 | 1 << 14, "4g"), (1 << 18, nil), (UInt32.max, "5g"),
        ]
        for (mask, generation) in expected {
            XCTAssertEqual(CellularGeneration(accessTechnologies: mask)?.rawValue, generation, "mask \(mask)")
        }
    }

    func modem(_ path: String, ports: [(String, UInt32)], mask: DBusValue) -> RemoteObject {
        RemoteObject(
            path: path,
            interfaces: [
                LinkFactsTable.modemInterface: [
                    "Ports": .array(
                        .structure([.string, .uint32]), ports.map { .structure([.string($0.0), .uint32($0.1)]) }),
                    "AccessTechnologies": mask,
                ]
            ])
    }

    func device(_ interface: String, ip: String = "", metered: DBusValue) -> RemoteObject {
        RemoteObject(
            path: "/d/" + interface,
            interfaces: [
                LinkFactsTable.deviceInterface: [
                    "Interface": .string(interface), "IpInterface": .string(ip), "Metered": metered,
                ]
            ])
    }

    /// DHCPv4 option 114 as NetworkManager reports it: the device's Dhcp4Config object, its Options'
    /// `captive_portal`; taken only when printable and bounded, on the interface carrying IP.
    func testDHCPsCaptivePortalOptionIsTheInterfaces() {
        func config(_ path: String, _ options: [String: DBusValue]) -> RemoteObject {
            let entries = options.map { DBusDictEntry(key: .string($0.key), value: .variant($0.value)) }
            let properties: [String: DBusValue] = ["Options": .dictionary(key: .string, value: .variant, entries)]
            return RemoteObject(path: path, interfaces: [LinkFactsTable.dhcp4Interface: properties])
        }
        func device(_ interface: String, ip: String = "", config: String) -> RemoteObject {
            RemoteObject(
                path: "/d/" + interface,
                interfaces: [
                    LinkFactsTable.deviceInterface: [
                        "Interface": .string(interface), "IpInterface": .string(ip), "Dhcp4Config": .objectPath(config),
                    ]
                ])
        }
        let table = LinkFactsTable(
            modems: [],
            devices: [
                config(
                    "/c/1",
                    ["captive_portal": .string("https://api.example/capport"), "ip_address": .string("198.18.0.2")]),
                config("/c/2", ["captive_portal": .string("https://bad example/")]),
                config("/c/3", ["captive_portal": .uint32(5)]),
                config("/c/4", ["captive_portal": .string("https://wwan.example/")]),
                device("wlan0", config: "/c/1"), device("eth0", config: "/c/2"), device("eth1", config: "/c/3"),
                device("eth2", config: "/"), device("cdc-wdm0", ip: "wwan0", config: "/c/4"),
            ])
        XCTAssertEqual(
            table.byInterface.compactMapValues(\.dhcpPortalAPI),
            ["wlan0": "https://api.example/capport", "wwan0": "https://wwan.example/"])
    }

    func testTheTableNamesNetPortsAndMeteredDevices() {
        let table = LinkFactsTable(
            modems: [
                modem("/m/0", ports: [("cdc-wdm0", 6), ("wwan0", 2), ("ttyUSB2", 3)], mask: .uint32(1 << 14)),
                modem("/m/1", ports: [("usb0", 2)], mask: .uint32(0)),
                modem("/m/2", ports: [("bad", 2)], mask: .string("4g")),
                RemoteObject(path: "/m/3", interfaces: [LinkFactsTable.modemInterface: ["Ports": .string("nonsense")]]),
            ],
            devices: [
                device("eth0", metered: .uint32(1)), device("eth1", metered: .uint32(3)),
                device("eth2", metered: .uint32(2)),
                device("eth3", metered: .uint32(4)), device("cdc-wdm0", ip: "wwan0", metered: .uint32(1)),
                device("eth4", metered: .string("yes")),
            ])
        XCTAssertEqual(table["wwan0"], LinkFacts(isModem: true, generation: .g4, meteredByNetworkManager: true))
        XCTAssertEqual(table["usb0"], LinkFacts(isModem: true, generation: nil))
        XCTAssertEqual(table["bad"], LinkFacts(isModem: true, generation: nil))
        XCTAssertNil(table["ttyUSB2"])
        XCTAssertEqual(table["eth0"]?.meteredByNetworkManager, true)
        XCTAssertEqual(table["eth1"]?.meteredByNetworkManager, true)
        XCTAssertNil(table["eth2"])
        XCTAssertNil(table["eth3"])
        XCTAssertNil(table["eth4"])
        XCTAssertNil(table[""])
    }

    func state(
        _ table: LinkFactsTable, kind: InterfaceKind = .ethernet, answering: Bool? = true, usable: Bool = true
    ) -> MonitorState {
        let route = ReachabilityVerdict(
            usable: usable, interface: "c0", kind: usable ? kind : nil, source: "198.18.0.2",
            reason: usable ? "" : "interface c0 has no carrier")
        // The view of the one link the table names (another than the route's says nothing of it).
        let link = table.byInterface.first.map { LinkView(id: LinkID(index: 9, generation: 1), name: $0, facts: $1) }
        return StatusRules.state(
            host: "h", resolution: .resolved(IPAddress("198.18.2.2")!), route: route,
            probe: ProbeReport(answering: answering), link: link, previous: MonitorState())
    }

    func testAModemRouteIsCellularWithItsGenerationAndMetered() {
        let modem = LinkFactsTable(["c0": LinkFacts(isModem: true, generation: .g3)])
        var s = state(modem)
        XCTAssertEqual(s.status, .cellular)
        XCTAssertEqual(s.accessTechnology, "3g")
        XCTAssertTrue(s.metered)
        // Not answering: Status none, but the route is still over the modem.
        s = state(modem, answering: false)
        XCTAssertEqual(s.status, .none)
        XCTAssertEqual(s.accessTechnology, "3g")
        XCTAssertTrue(s.metered)
        // Another interface's facts say nothing about this route.
        s = state(LinkFactsTable(["c1": LinkFacts(isModem: true, generation: .g5)]))
        XCTAssertEqual(s.status, .ethernet)
        XCTAssertEqual(s.accessTechnology, "")
        XCTAssertFalse(s.metered)
    }

    func testMeteredFollowsNetworkManagerOrACellularKind() {
        XCTAssertTrue(state(LinkFactsTable(["c0": LinkFacts(meteredByNetworkManager: true)])).metered)
        XCTAssertEqual(state(LinkFactsTable(["c0": LinkFacts(meteredByNetworkManager: true)])).status, .ethernet)
        XCTAssertFalse(state(LinkFactsTable()).metered)
        // Without the services, the kernel's kind decides.
        XCTAssertTrue(state(LinkFactsTable(), kind: .cellular).metered)
        XCTAssertEqual(state(LinkFactsTable(), kind: .wifi).accessTechnology, "")
    }
}
