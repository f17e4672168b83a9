import DBusKit

/// org.netobserver.Monitor, declared once: dispatch, Properties, introspection
/// and dbus/org.netobserver.Monitor.xml all come from this table.
public enum MonitorInterface {
    public static let busName = "org.netobserver.Monitor"
    public static let objectPath = "/org/netobserver/Monitor"
    public static let name = "org.netobserver.Monitor"
    public static let waitTimeoutRange: ClosedRange<UInt32> = 0...3_600_000

    public static func declaration(model: MonitorModel,
                                   check: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
                                   wait: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
                                   persist: @escaping (MonitorSettings.Key, MethodCall) -> MethodOutcome) -> DBusInterface {
        func setting(_ key: MonitorSettings.Key, _ type: DBusType, get: @escaping (MonitorSettings) -> DBusValue) -> DBusProperty {
            DBusProperty(key.rawValue, type, access: .readwrite, get: { get(model.settings) }, answeringSet: { value, call throws(DBusError) in
                do throws(SettingError) {
                    try model.set(key) { (settings: inout MonitorSettings) throws(SettingError) in
                        if let number = value.uint32Value {
                            try settings.set(key, number: number)
                        } else {
                            try settings.set(key, text: value.stringValue ?? "")
                        }
                    }
                } catch {
                    throw .invalidArgs(error.message)
                }
                return persist(key, call)
            })
        }
        func state(_ name: String, _ type: DBusType, _ mode: PropertyChangeMode = .emits,
                   get: @escaping (MonitorState) -> DBusValue) -> DBusProperty {
            DBusProperty(name, type, changeMode: mode, get: { get(model.state) })
        }
        return DBusInterface(name, methods: [
            DBusMethod("Check", outputs: [DBusArgument("status", .string)], handler: check),
            DBusMethod("Wait", inputs: [DBusArgument("timeout_ms", .uint32)], outputs: [DBusArgument("reachable", .boolean)],
                       handler: wait),
        ], properties: [
            state("Status", .string) { .string($0.status.rawValue) },
            setting(.host, .string) { .string($0.host) },
            state("Reachable", .boolean) { .boolean($0.reachable) },
            state("Interface", .string) { .string($0.interface) },
            state("Address", .string) { .string($0.address) },
            state("Reason", .string) { .string($0.reason) },
            state("RoundTripTime", .uint64, .quiet) { .uint64($0.roundTripTime) },
            state("PacketLoss", .double, .quiet) { .double($0.packetLoss) },
            state("LastChange", .uint64) { .uint64($0.lastChange) },
            setting(.interval, .uint32) { .uint32($0.interval) },
            setting(.timeout, .uint32) { .uint32($0.timeout) },
            setting(.failureThreshold, .uint32) { .uint32($0.failureThreshold) },
            setting(.recoveryThreshold, .uint32) { .uint32($0.recoveryThreshold) },
            setting(.family, .string) { .string($0.family.rawValue) },
        ], signals: [
            DBusSignal("StatusChanged", [DBusArgument("status", .string), DBusArgument("host", .string)]),
        ])
    }
}
