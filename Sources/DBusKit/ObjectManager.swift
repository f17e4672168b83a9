/// org.freedesktop.DBus.ObjectManager over an `ObjectServer`'s objects: the objects
/// exported below a root, each with its interfaces and their readable properties.
enum ObjectManager {
    static let name = "org.freedesktop.DBus.ObjectManager"
    /// `a{sa{sv}}`: interfaces by name, each with its properties.
    static let interfacesType = DBusType.dictionary(key: .string, value: .dictionary(key: .string, value: .variant))
    /// `a{oa{sa{sv}}}`: objects by path, each with its interfaces.
    static let objectsType = DBusType.dictionary(key: .objectPath, value: interfacesType)

    /// `a{sa{sv}}`: every interface of an object, with its readable properties' values
    /// (the standard interfaces too, with none, as GDBus lists them).
    static func interfacesAndProperties(_ interfaces: [DBusInterface]) -> DBusValue {
        .dictionary(
            key: .string, value: .dictionary(key: .string, value: .variant),
            interfaces.map { interface in
                DBusDictEntry(
                    key: .string(interface.name),
                    value: .variantMap(
                        interface.properties.filter { $0.access != .write }
                            .map { ($0.name, $0.get()) }))
            })
    }

    static func interface(
        managedObjects: @escaping () -> [(path: String, interfaces: [DBusInterface])]
    ) -> DBusInterface {
        DBusInterface(
            name,
            methods: [
                DBusMethod(
                    "GetManagedObjects", outputs: [DBusArgument("object_paths_interfaces_and_properties", objectsType)],
                    replyLimit: .max
                ) {
                    _ throws(DBusError) in
                    let entries = managedObjects().map { object in
                        DBusDictEntry(key: .objectPath(object.path), value: interfacesAndProperties(object.interfaces))
                    }
                    return .reply([.dictionary(key: .objectPath, value: interfacesType, entries)])
                }
            ],
            signals: [
                DBusSignal(
                    "InterfacesAdded",
                    [
                        DBusArgument("object_path", .objectPath),
                        DBusArgument("interfaces_and_properties", interfacesType),
                    ]),
                DBusSignal(
                    "InterfacesRemoved",
                    [DBusArgument("object_path", .objectPath), DBusArgument("interfaces", .array(.string))]),
            ])
    }
}
