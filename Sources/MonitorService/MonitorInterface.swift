import DBusKit
import MonitorContract

/// org.netobserver.Monitor bound to a model: MonitorContract says what each property,
/// method and signal is; this says where each value comes from. Dispatch, Properties,
/// introspection and dbus/org.netobserver.Monitor.xml all come from the result.
public enum MonitorInterface {
    public static func declaration(
        model: MonitorModel,
        check: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
        wait: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
        getHistory: @escaping (MethodCall) throws(DBusError) -> MethodOutcome,
        persist: @escaping (MonitorSettings.Key, MethodCall) -> MethodOutcome
    ) -> DBusInterface {
        func setting(_ key: MonitorSettings.Key) -> DBusProperty {
            let property = key.property
            return DBusProperty(
                property.name, property.type, access: property.access, changeMode: property.changeMode,
                get: { model.value(property) },
                answeringSet: { value, call throws(DBusError) in
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
            DBusProperty(
                property.name, property.type, access: property.access, changeMode: property.changeMode,
                get: { model.value(property) })
        }
        let handlers: [MonitorContract.Method: (MethodCall) throws(DBusError) -> MethodOutcome] = [
            .check: check, .wait: wait, .getHistory: getHistory,
        ]
        return DBusInterface(
            MonitorContract.interface,
            methods: MonitorContract.Method.allCases.map { method in
                DBusMethod(
                    method.name, inputs: method.inputs, outputs: method.outputs, handler: handlers[method] ?? check)
            },
            properties: MonitorContract.Property.allCases.map { property in
                MonitorSettings.Key(property).map(setting) ?? state(property)
            }, signals: MonitorContract.Signal.allCases.map { DBusSignal($0.name, $0.arguments) },
            version: {
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
