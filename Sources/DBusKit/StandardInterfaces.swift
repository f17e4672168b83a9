/// org.freedesktop.DBus.{Properties,Introspectable,Peer}, declared like any
/// other interface and routed into the object's own declarations.
enum StandardInterfaces {
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = "org.freedesktop.DBus.Peer"

    static func peerInterface(machineID: String) -> DBusInterface {
        DBusInterface(
            peer,
            methods: [
                DBusMethod("Ping") { _ throws(DBusError) in .reply([]) },
                DBusMethod("GetMachineId", outputs: [DBusArgument("machine_uuid", .string)]) { _ throws(DBusError) in
                    .reply([.string(machineID)])
                },
            ])
    }

    static func introspectableInterface(xml: @escaping () -> String) -> DBusInterface {
        DBusInterface(
            introspectable,
            methods: [
                DBusMethod("Introspect", outputs: [DBusArgument("xml_data", .string)], replyLimit: .max) {
                    _ throws(DBusError) in
                    .reply([.string(xml())])
                }
            ])
    }

    /// Get's and GetAll's replies as last marshalled, with the version of the interface they are of: GetAll's by
    /// interface, Get's by interface and property.
    private final class KeptReplies {
        /// By identity: a Get hashes two words, not two names.
        struct Key: Hashable {
            let interface: ObjectIdentifier
            /// nil: GetAll's.
            let property: ObjectIdentifier?
        }
        // One lookup or one store per access, none running our code: no overlap, so no run-time check.
        @exclusivity(unchecked) private var kept: [Key: (version: UInt64, template: ReplyTemplate)] = [:]

        /// Answers `call` with a copy of the reply kept for `key` at `version`, else with `values()`, kept when it
        /// fits a reply; without a version, with `values()` each time.
        func answer(
            _ call: MethodCall, _ key: Key, version: UInt64?,
            _ values: () -> [DBusValue]
        ) throws(DBusError) -> MethodOutcome {
            guard let version else { return .reply(values()) }
            if let hit = kept[key], hit.version == version {
                call.reply(copying: hit.template)
                return .later
            }
            let body = values()
            // Too large: `.reply` answers LimitsExceeded.
            guard call.fits(body) else { return .reply(body) }
            let template = try ReplyTemplate(body)
            kept[key] = (version, template)
            call.reply(copying: template)
            return .later
        }
    }

    /// Properties over `interfaces` (the object's own ones). Its arguments are
    /// read straight from the message; the value of a Set only after its type
    /// was found to be the property's.
    static func propertiesInterface(_ interfaces: [DBusInterface]) -> DBusInterface {
        let replies = KeptReplies()
        func lookUpWithInterface(_ call: MethodCall) throws(DBusError) -> (DBusInterface, DBusProperty) {
            guard let (interfaceName, propertyName) = call.twoCStrings() else {
                throw .invalidArgs("expected an interface name and a property name")
            }
            if interfaceName.pointee == 0 {
                for interface in interfaces {
                    if let property = interface.property(named: propertyName) { return (interface, property) }
                }
            } else {
                let interface = try named(interfaces, interfaceName)
                if let property = interface.property(named: propertyName) { return (interface, property) }
            }
            throw .unknownProperty(
                "No such property '\(quotedName(propertyName))' on interface '\(quotedName(interfaceName))'")
        }
        func lookUp(_ call: MethodCall) throws(DBusError) -> DBusProperty { try lookUpWithInterface(call).1 }
        return DBusInterface(
            properties,
            methods: [
                DBusMethod(
                    "Get", inputs: [DBusArgument("interface_name", .string), DBusArgument("property_name", .string)],
                    outputs: [DBusArgument("value", .variant)]
                ) { call throws(DBusError) in
                    let (interface, property) = try lookUpWithInterface(call)
                    guard property.access != .write else {
                        throw .accessDenied("Property '\(property.name)' is write-only")
                    }
                    return try replies.answer(
                        call, .init(interface: ObjectIdentifier(interface), property: ObjectIdentifier(property)),
                        version: interface.version?()
                    ) { [.variant(property.get())] }
                },
                DBusMethod(
                    "GetAll", inputs: [DBusArgument("interface_name", .string)],
                    outputs: [DBusArgument("properties", .dictionary(key: .string, value: .variant))]
                ) { call throws(DBusError) in
                    guard let interfaceName = call.cString(at: 0) else {
                        throw .invalidArgs("expected an interface name")
                    }
                    // One interface named (no array built for it), or all of them.
                    let named = interfaceName.pointee == 0 ? nil : try named(interfaces, interfaceName)
                    let single = named ?? (interfaces.count == 1 ? interfaces.first : nil)
                    func entries() -> [DBusValue] {
                        var entries: [(String, DBusValue)] = []
                        func add(_ interface: DBusInterface) {
                            for property in interface.properties where property.access != .write {
                                entries.append((property.name, property.get()))
                            }
                        }
                        if let single { add(single) } else { interfaces.forEach(add) }
                        return [.variantMap(entries)]
                    }
                    // Kept only for one interface that says when its values change.
                    guard let single else { return .reply(entries()) }
                    return try replies.answer(
                        call, .init(interface: ObjectIdentifier(single), property: nil), version: single.version?(),
                        entries)
                },
                DBusMethod(
                    "Set",
                    inputs: [
                        DBusArgument("interface_name", .string), DBusArgument("property_name", .string),
                        DBusArgument("value", .variant),
                    ]
                ) { call throws(DBusError) in
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
            ],
            signals: [
                DBusSignal(
                    "PropertiesChanged",
                    [
                        DBusArgument("interface_name", .string),
                        DBusArgument("changed_properties", .dictionary(key: .string, value: .variant)),
                        DBusArgument("invalidated_properties", .array(.string)),
                    ])
            ])
    }

    /// The interface an interface-name argument names; UnknownInterface when none has that name.
    private static func named(
        _ interfaces: [DBusInterface], _ name: UnsafePointer<CChar>
    ) throws(DBusError) -> DBusInterface {
        guard let match = interfaces.first(where: { $0.name.equals(name) }) else {
            throw .unknownInterface("No such interface '\(quotedName(name))'")
        }
        return match
    }
}
