/// org.freedesktop.DBus.{Properties,Introspectable,Peer}, declared like any
/// other interface and routed into the object's own declarations.
enum StandardInterfaces {
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = "org.freedesktop.DBus.Peer"

    static func peerInterface(machineID: String) -> DBusInterface {
        DBusInterface(peer, methods: [
            DBusMethod("Ping") { _ throws(DBusError) in .reply([]) },
            DBusMethod("GetMachineId", outputs: [DBusArgument("machine_uuid", .string)]) { _ throws(DBusError) in
                .reply([.string(machineID)])
            },
        ])
    }

    static func introspectableInterface(xml: @escaping () -> String) -> DBusInterface {
        DBusInterface(introspectable, methods: [
            DBusMethod("Introspect", outputs: [DBusArgument("xml_data", .string)]) { _ throws(DBusError) in
                .reply([.string(xml())])
            },
        ])
    }

    /// Properties over `interfaces` (the object's own ones).
    static func propertiesInterface(_ interfaces: @escaping () -> [DBusInterface]) -> DBusInterface {
        func lookUp(_ interfaceName: String, _ propertyName: String) throws(DBusError) -> (DBusInterface, DBusProperty) {
            let candidates = try select(interfaces(), interfaceName)
            for interface in candidates {
                if let property = interface.property(named: propertyName) { return (interface, property) }
            }
            throw .unknownProperty("No such property '\(propertyName)' on interface '\(interfaceName)'")
        }
        return DBusInterface(properties, methods: [
            DBusMethod("Get", inputs: [DBusArgument("interface_name", .string), DBusArgument("property_name", .string)],
                       outputs: [DBusArgument("value", .variant)]) { call throws(DBusError) in
                let (_, property) = try lookUp(call.string(0), call.string(1))
                guard property.access != .write else { throw .accessDenied("Property '\(property.name)' is write-only") }
                return .reply([.variant(property.get())])
            },
            DBusMethod("GetAll", inputs: [DBusArgument("interface_name", .string)],
                       outputs: [DBusArgument("properties", .dictionary(key: .string, value: .variant))]) { call throws(DBusError) in
                var entries: [(String, DBusValue)] = []
                for interface in try select(interfaces(), call.string(0)) {
                    for property in interface.properties where property.access != .write {
                        entries.append((property.name, property.get()))
                    }
                }
                return .reply([.variantMap(entries)])
            },
            DBusMethod("Set", inputs: [DBusArgument("interface_name", .string), DBusArgument("property_name", .string),
                                       DBusArgument("value", .variant)]) { call throws(DBusError) in
                let (_, property) = try lookUp(call.string(0), call.string(1))
                guard let set = property.set, property.access != .read else {
                    throw .propertyReadOnly("Property '\(property.name)' is read-only")
                }
                let value = call.arguments[2].unwrappedVariant
                guard value.type == property.type else {
                    throw .invalidArgs("Property '\(property.name)' has type '\(property.type.signature)', not '\(value.type.signature)'")
                }
                try set(value)
                return .reply([])
            },
        ], signals: [
            DBusSignal("PropertiesChanged", [DBusArgument("interface_name", .string),
                                             DBusArgument("changed_properties", .dictionary(key: .string, value: .variant)),
                                             DBusArgument("invalidated_properties", .array(.string))]),
        ])
    }

    /// The interfaces an interface-name argument selects: "" means all of them.
    private static func select(_ interfaces: [DBusInterface], _ name: String) throws(DBusError) -> [DBusInterface] {
        if name.isEmpty { return interfaces }
        guard let match = interfaces.first(where: { $0.name == name }) else {
            throw .unknownInterface("No such interface '\(name)'")
        }
        return [match]
    }
}

extension MethodCall {
    /// The string argument at `index`; the signature was checked before dispatch.
    func string(_ index: Int) -> String {
        arguments.indices.contains(index) ? arguments[index].stringValue ?? "" : ""
    }
}
