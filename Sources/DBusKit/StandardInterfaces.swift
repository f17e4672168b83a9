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
            DBusMethod("Introspect", outputs: [DBusArgument("xml_data", .string)], replyLimit: .max) { _ throws(DBusError) in
                .reply([.string(xml())])
            },
        ])
    }

    /// Properties over `interfaces` (the object's own ones). Its arguments are
    /// read straight from the message; the value of a Set only after its type
    /// was found to be the property's.
    static func propertiesInterface(_ interfaces: [DBusInterface]) -> DBusInterface {
        func lookUp(_ call: MethodCall) throws(DBusError) -> DBusProperty {
            guard let (interfaceName, propertyName) = call.twoCStrings() else {
                throw .invalidArgs("expected an interface name and a property name")
            }
            if interfaceName.pointee == 0 {
                for interface in interfaces {
                    if let property = interface.property(named: propertyName) { return property }
                }
            } else if let property = try named(interfaces, interfaceName).property(named: propertyName) {
                return property
            }
            throw .unknownProperty("No such property '\(quotedName(propertyName))' on interface '\(quotedName(interfaceName))'")
        }
        return DBusInterface(properties, methods: [
            DBusMethod("Get", inputs: [DBusArgument("interface_name", .string), DBusArgument("property_name", .string)],
                       outputs: [DBusArgument("value", .variant)]) { call throws(DBusError) in
                let property = try lookUp(call)
                guard property.access != .write else { throw .accessDenied("Property '\(property.name)' is write-only") }
                return .reply([.variant(property.get())])
            },
            DBusMethod("GetAll", inputs: [DBusArgument("interface_name", .string)],
                       outputs: [DBusArgument("properties", .dictionary(key: .string, value: .variant))]) { call throws(DBusError) in
                guard let interfaceName = call.cString(at: 0) else { throw .invalidArgs("expected an interface name") }
                var entries: [(String, DBusValue)] = []
                for interface in try select(interfaces, interfaceName) {
                    for property in interface.properties where property.access != .write {
                        entries.append((property.name, property.get()))
                    }
                }
                return .reply([.variantMap(entries)])
            },
            DBusMethod("Set", inputs: [DBusArgument("interface_name", .string), DBusArgument("property_name", .string),
                                       DBusArgument("value", .variant)]) { call throws(DBusError) in
                let property = try lookUp(call)
                guard let set = property.set, property.access != .read else {
                    throw .propertyReadOnly("Property '\(property.name)' is read-only")
                }
                let value: DBusValue
                do throws(DBusError) {
                    value = try call.variant(at: 2, expected: property.type)
                } catch {
                    throw .invalidArgs("Property '\(property.name)': \(error.message)")
                }
                return try set(value, call)
            },
        ], signals: [
            DBusSignal("PropertiesChanged", [DBusArgument("interface_name", .string),
                                             DBusArgument("changed_properties", .dictionary(key: .string, value: .variant)),
                                             DBusArgument("invalidated_properties", .array(.string))]),
        ])
    }

    /// The interfaces an interface-name argument selects: "" means all of them.
    private static func select(_ interfaces: [DBusInterface], _ name: UnsafePointer<CChar>) throws(DBusError) -> [DBusInterface] {
        name.pointee == 0 ? interfaces : [try named(interfaces, name)]
    }

    private static func named(_ interfaces: [DBusInterface], _ name: UnsafePointer<CChar>) throws(DBusError) -> DBusInterface {
        guard let match = interfaces.first(where: { $0.name.equals(name) }) else {
            throw .unknownInterface("No such interface '\(quotedName(name))'")
        }
        return match
    }
}
