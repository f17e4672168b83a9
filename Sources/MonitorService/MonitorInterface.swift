import DBusKit
import MonitorContract

/// org.netobserver.Monitor bound to a model: MonitorContract says what each property,
/// method and signal is; this says where each value comes from. Dispatch, Properties,
/// introspection and dbus/org.netobserver.Monitor.xml all come from the result.
public enum MonitorInterface {
    public static func declaration(model: MonitorModel,
                                   check: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
                                   wait: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
                                   getHistory: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
                                   persist: @escaping (MonitorSettings.Key, MethodCall) -> MethodOutcome) -> DBusInterface {
        func setting(_ key: MonitorSettings.Key) -> DBusProperty {
            let property = key.property
            return DBusProperty(property.name, property.type, access: property.access, changeMode: property.changeMode,
                                get: { model.value(property) }, answeringSet: { value, call throws(DBusError) in
                do throws(SettingError) {
                    try model.set(key) { (settings: inout MonitorSettings) throws(SettingError) in
                        if let number = value.uint32Value {
                            try settings.set(key, number: number)
                        } else if let flag = value.boolValue {
                            try settings.set(key, text: flag ? "true" : "false")
                        } else {
                            try settings.set(key, text: value.stringValue ?? "", isThisMachine: model.isThisMachine)
                        }
                    }
                } catch {
                    throw .invalidArgs(error.message)
                }
                return persist(key, call)
            })
        }
        func state(_ property: MonitorContract.Property) -> DBusProperty {
            DBusProperty(property.name, property.type, access: property.access, changeMode: property.changeMode,
                         get: { model.value(property) })
        }
        let handlers: [MonitorContract.Method: (MethodCall) throws(DBusError) -> MethodOutcome] = [
            .check: check, .wait: wait, .getHistory: getHistory,
        ]
        return DBusInterface(MonitorContract.interface, methods: MonitorContract.Method.allCases.map { method in
            DBusMethod(method.name, inputs: method.inputs, outputs: method.outputs, handler: handlers[method] ?? check)
        }, properties: MonitorContract.Property.allCases.map { property in
            MonitorSettings.Key(property).map(setting) ?? state(property)
        }, signals: MonitorContract.Signal.allCases.map { DBusSignal($0.name, $0.arguments) }, version: {
            // The model's changes, and TimeInState's seconds (which pass without one).
            model.version &* 0x1_0000_0000 &+ model.timeInStateTick()
        })
    }
}

extension MonitorSettings.Key {
    init?(_ property: MonitorContract.Property) {
        guard let key = Self.allCases.first(where: { $0.property == property }) else { return nil }
        self = key
    }
}

extension MonitorModel {
    /// A property's current value, typed as the contract says.
    func value(_ property: MonitorContract.Property) -> DBusValue {
        switch property {
        case .status: .string(state.status.rawValue)
        case .host: .string(settings.host)
        case .reachable: .boolean(state.reachable)
        case .interface: .string(state.interface)
        case .address: .string(state.address)
        case .reason: .string(state.reason)
        case .roundTripTime: .uint64(state.roundTripTime)
        case .packetLoss: .double(state.packetLoss)
        case .lastChange: .uint64(state.lastChange)
        case .interval: .uint32(settings.interval)
        case .timeout: .uint32(settings.timeout)
        case .failureThreshold: .uint32(settings.failureThreshold)
        case .recoveryThreshold: .uint32(settings.recoveryThreshold)
        case .addressFamily: .string(settings.family.rawValue)
        case .probesSent: .uint64(state.probesSent)
        case .probesAnswered: .uint64(state.probesAnswered)
        case .accessTechnology: .string(state.accessTechnology)
        case .metered: .boolean(state.metered)
        case .connectivity: .string(state.connectivity.rawValue)
        case .probeMethod: .string(state.probeMethod)
        case .checkURL: .string(settings.checkURL)
        case .portalURL: .string(state.portalURL)
        case .traffic: .string(state.traffic.rawValue)
        case .evidence: .string(settings.evidence.rawValue)
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
        case .nat64Source: .string(state.nat64Source)
        case .ipv4Path: .string(state.ipv4Path)
        case .portalAPI: .string(state.portalAPI)
        case .portalVenueURL: .string(state.portalVenueURL)
        case .portalSecondsRemaining: .uint64(state.portalSecondsRemaining)
        case .secureCheckURL: .string(settings.secureCheckURL)
        case .checkEcho: .boolean(settings.checkEcho)
        case .partial: .boolean(state.partial)
        case .gateway4: .string(state.ipv4.gateway)
        case .gateway6: .string(state.ipv6.gateway)
        case .blame: .string(state.blame)
        case .neighbor4: .string(state.ipv4.neighbor)
        case .neighbor6: .string(state.ipv6.neighbor)
        case .timeInState: .dictionary(key: .string, value: .uint64, timeInState().map { DBusDictEntry(key: .string($0.0), value: .uint64($0.1)) })
        }
    }
}
