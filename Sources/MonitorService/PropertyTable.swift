import DBusKit
import MonitorContract
import MonitorRules

/// Where each property's value comes from: the state, the settings, or the history's seconds.
/// MonitorContract says what a property is (name, type, access, signal rule); this says what it
/// reads, once. Get, GetAll and the change sets of PropertiesChanged all come from it: a state
/// property announces a change exactly when its value here differs.
extension MonitorContract.Property {
    /// The value of a property that reads the state; nil for the settings and TimeInState.
    func value(in state: MonitorState) -> DBusValue? {
        switch self {
        case .status: .string(state.status.rawValue)
        case .reachable: .boolean(state.reachable)
        case .interface: .string(state.interface)
        case .address: .string(state.address)
        case .reason: .string(state.reason)
        case .roundTripTime: .uint64(state.roundTripTime)
        case .packetLoss: .double(state.packetLoss)
        case .lastChange: .uint64(state.lastChange)
        case .probesSent: .uint64(state.probesSent)
        case .probesAnswered: .uint64(state.probesAnswered)
        case .accessTechnology: .string(state.accessTechnology)
        case .metered: .boolean(state.metered)
        case .connectivity: .string(state.connectivity.rawValue)
        case .probeMethod: .string(state.probeMethod)
        case .portalURL: .string(state.portalURL)
        case .traffic: .string(state.traffic.rawValue)
        case .probesSkipped: .uint64(state.probesSkipped)
        case .connectivity4: .string(state.ipv4.connectivity.rawValue)
        case .connectivity6: .string(state.ipv6.connectivity.rawValue)
        case .address4: .string(state.ipv4.address)
        case .address6: .string(state.ipv6.address)
        case .reason4: .string(state.ipv4.reason)
        case .reason6: .string(state.ipv6.reason)
        case .roundTripTime4: .uint64(state.ipv4.roundTripTime)
        case .roundTripTime6: .uint64(state.ipv6.roundTripTime)
        case .nat64Prefix: .string(state.nat64Prefix)
        case .nat64Source: .string(state.nat64Source?.rawValue ?? "")
        case .ipv4Path: .string(state.ipv4Path?.rawValue ?? "")
        case .portalAPI: .string(state.portalAPI)
        case .portalVenueURL: .string(state.portalVenueURL)
        case .portalSecondsRemaining: .uint64(state.portalSecondsRemaining)
        case .partial: .boolean(state.partial)
        case .gateway4: .string(state.ipv4.gateway)
        case .gateway6: .string(state.ipv6.gateway)
        case .blame: .string(state.blame?.rawValue ?? "")
        case .neighbor4: .string(state.ipv4.neighbor?.rawValue ?? "")
        case .neighbor6: .string(state.ipv6.neighbor?.rawValue ?? "")
        case .dns: .string(state.dns.health.rawValue)
        case .dnsServer: .string(state.dns.server)
        case .dnsTransport: .string(state.dns.transport.rawValue)
        case .dnsRoundTripTime: .uint64(state.dns.roundTripTime)
        case .host, .interval, .timeout, .failureThreshold, .recoveryThreshold, .addressFamily, .checkURL, .evidence,
            .secureCheckURL, .checkEcho, .timeInState, .dnsProbeZone, .probing, .idleInterval:
            nil
        }
    }

    /// The value of a setting; nil for every other property.
    func value(in settings: MonitorSettings) -> DBusValue? {
        switch self {
        case .host: .string(settings.host)
        case .interval: .uint32(settings.interval)
        case .timeout: .uint32(settings.timeout)
        case .failureThreshold: .uint32(settings.failureThreshold)
        case .recoveryThreshold: .uint32(settings.recoveryThreshold)
        case .addressFamily: .string(settings.family.rawValue)
        case .checkURL: .string(settings.checkURL)
        case .evidence: .string(settings.evidence.rawValue)
        case .secureCheckURL: .string(settings.secureCheckURL)
        case .checkEcho: .boolean(settings.checkEcho)
        case .dnsProbeZone: .string(settings.dnsProbeZone)
        case .probing: .string(settings.probing.rawValue)
        case .idleInterval: .uint32(settings.idleInterval)
        default: nil
        }
    }

    /// The properties that read the state, in the contract's order.
    static let stateProperties = allCases.filter { $0.value(in: MonitorState()) != nil }
}

extension MonitorState {
    /// The properties whose values differ between two states.
    public func changedProperties(from old: MonitorState) -> [MonitorContract.Property] {
        MonitorContract.Property.stateProperties.filter { $0.value(in: self) != $0.value(in: old) }
    }
}

extension MonitorModel {
    /// A property's current value, typed as the contract says.
    func value(_ property: MonitorContract.Property) -> DBusValue {
        property.value(in: state) ?? property.value(in: settings)
            ?? .dictionary(
                key: .string, value: .uint64,
                timeInState().map { DBusDictEntry(key: .string($0.0), value: .uint64($0.1)) })
    }
}
