import DBusKit
import MonitorContract
@testable import MonitorService
import MonitorRules
import XCTest

/// The property table's rule: every property reads exactly one source, and a state differing in one
/// field announces exactly the property that shows it (Status also Reachable, which it decides).
final class PropertyTableTests: XCTestCase {
    typealias P = MonitorContract.Property

    /// One change per state property: the pin that no property is left out of the change sets.
    let changes: [P: (inout MonitorState) -> Void] = [
        .status: { $0.status = .wifi },
        .reachable: { $0.status = .vpn },
        .interface: { $0.interface = "wlan0" },
        .address: { $0.address = "198.18.0.9" },
        .reason: { $0.reason = "why" },
        .roundTripTime: { $0.roundTripTime = 1 },
        .packetLoss: { $0.packetLoss = 0.5 },
        .lastChange: { $0.lastChange = 7 },
        .probesSent: { $0.probesSent = 1 },
        .probesAnswered: { $0.probesAnswered = 1 },
        .accessTechnology: { $0.accessTechnology = "5g" },
        .metered: { $0.metered = true },
        .connectivity: { $0.connectivity = .portal },
        .probeMethod: { $0.probeMethod = "tcp" },
        .portalURL: { $0.portalURL = "http://portal.example/" },
        .traffic: { $0.traffic = .flowing },
        .probesSkipped: { $0.probesSkipped = 1 },
        .connectivity4: { $0.ipv4.connectivity = .full },
        .connectivity6: { $0.ipv6.connectivity = .full },
        .address4: { $0.ipv4.address = "198.18.0.9" },
        .address6: { $0.ipv6.address = "fd00::9" },
        .reason4: { $0.ipv4.reason = "why" },
        .reason6: { $0.ipv6.reason = "why" },
        .roundTripTime4: { $0.ipv4.roundTripTime = 1 },
        .roundTripTime6: { $0.ipv6.roundTripTime = 1 },
        .nat64Prefix: { $0.nat64Prefix = "64:ff9b::/96" },
        .nat64Source: { $0.nat64Source = .ra },
        .ipv4Path: { $0.ipv4Path = .nat64 },
        .portalAPI: { $0.portalAPI = "https://portal.example/api" },
        .portalVenueURL: { $0.portalVenueURL = "https://venue.example/" },
        .portalSecondsRemaining: { $0.portalSecondsRemaining = 1 },
        .partial: { $0.partial = true },
        .gateway4: { $0.ipv4.gateway = "198.18.0.1" },
        .gateway6: { $0.ipv6.gateway = "fe80::1" },
        .blame: { $0.blame = .gateway },
        .neighbor4: { $0.ipv4.neighbor = .reachable },
        .neighbor6: { $0.ipv6.neighbor = .reachable },
        .dns: { $0.dns.health = .failing },
        .dnsServer: { $0.dns.server = "resolved" },
        .dnsTransport: { $0.dns.transport = .tls },
        .dnsRoundTripTime: { $0.dns.roundTripTime = 1 },
    ]

    func testEveryStateFieldAnnouncesExactlyItsProperty() {
        XCTAssertEqual(
            Set(changes.keys), Set(P.stateProperties), "a state property without a change here, or one too many")
        for (property, change) in changes {
            var state = MonitorState()
            change(&state)
            let expected: Set<P> = property == .status || property == .reachable ? [.status, .reachable] : [property]
            XCTAssertEqual(Set(state.changedProperties(from: MonitorState())), expected, "\(property)")
            XCTAssertEqual(state.changedProperties(from: state), [], "\(property)")
        }
    }

    func testEveryPropertyReadsOneSource() {
        let settings = MonitorSettings()
        for property in P.allCases {
            let sources = [
                property.value(in: MonitorState()) != nil, property.value(in: settings) != nil,
                property == .timeInState,
            ]
            XCTAssertEqual(sources.filter { $0 }.count, 1, "\(property) reads \(sources)")
            XCTAssertEqual(
                property.value(in: settings) != nil, property.isSetting, "\(property): a setting is what Set may write")
        }
    }

    func testEveryValueHasTheContractsType() {
        let model = MonitorModel(settings: MonitorSettings())
        for property in P.allCases {
            XCTAssertEqual(model.value(property).type, property.type, "\(property)")
        }
    }
}
