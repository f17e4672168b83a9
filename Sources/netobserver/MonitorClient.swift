import DBusKit
import EventLoop
import Glibc
import MonitorContract

/// Talks to org.netobserver.Monitor for the command line.
struct MonitorClient {
    let connection: BusConnection
    let bus: BusAddress

    /// Why the service could not be used, in words for the user (exit status 1).
    struct Failure: Error {
        let message: String
    }

    func failure(_ error: DBusError) -> Failure {
        let gone = ["org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
                    "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Disconnected"]
        if gone.contains(error.name) {
            let how = bus == .system ? "sudo systemctl start netobserver" : "netobserverd --session &  (or make run)"
            return Failure(message: "netobserverd is not running on the \(busName) (start it: \(how))")
        }
        return Failure(message: error.message)
    }

    var busName: String {
        switch bus {
        case .system: "system bus"
        case .session: "session bus"
        case .address(let address): "bus at \(address)"
        }
    }

    func call(_ interface: String, _ member: String, _ arguments: [DBusValue], timeoutMilliseconds: Int32 = 25_000) throws(Failure) -> [DBusValue] {
        do {
            let message = try Message.methodCall(destination: MonitorContract.busName, path: MonitorContract.objectPath,
                                                 interface: interface, member: member)
            try message.append(arguments)
            return try connection.callBlocking(message, timeoutMilliseconds: timeoutMilliseconds).arguments()
        } catch {
            throw failure(error)
        }
    }

    /// A method of org.netobserver.Monitor.
    func call(_ method: MonitorContract.Method, _ arguments: [DBusValue], timeoutMilliseconds: Int32) throws(Failure) -> [DBusValue] {
        try call(MonitorContract.interface, method.name, arguments, timeoutMilliseconds: timeoutMilliseconds)
    }

    func properties() throws(Failure) -> [String: DBusValue] {
        guard case .dictionary(_, _, let entries)? = try call(MonitorContract.propertiesInterface, "GetAll",
                                                              [.string(MonitorContract.interface)]).first else {
            throw Failure(message: "the service answered GetAll with something else")
        }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            if let key = entry.key.stringValue { result[key] = entry.value.unwrappedVariant }
        }
        return result
    }

    /// Calls `handler` with the changed values of every PropertiesChanged of the Monitor;
    /// quits the loop (status 1) when the bus goes away.
    func onPropertiesChanged(loop: MainLoop, _ handler: @escaping ([String: DBusValue]) -> Void) {
        connection.addMatch("type='signal',sender='\(MonitorContract.busName)',path='\(MonitorContract.objectPath)',"
                            + "interface='\(MonitorContract.propertiesInterface)',member='PropertiesChanged'")
        connection.onSignal = { message in
            guard message.isSignal(interface: MonitorContract.propertiesInterface, member: "PropertiesChanged"),
                  message.path == MonitorContract.objectPath,
                  let arguments = try? message.arguments(), arguments.count == 3,
                  arguments[0].stringValue == MonitorContract.interface,
                  case .dictionary(_, _, let entries) = arguments[1] else { return }
            var changed: [String: DBusValue] = [:]
            for entry in entries { if let key = entry.key.stringValue { changed[key] = entry.value.unwrappedVariant } }
            handler(changed)
        }
        connection.onDisconnected = {
            writeLine("netobserver: the bus went away", to: 2)
            loop.quit(status: 1)
        }
    }

    func set(_ property: MonitorContract.Property, _ value: DBusValue) throws(Failure) {
        _ = try call(MonitorContract.propertiesInterface, "Set",
                     [.string(MonitorContract.interface), .string(property.name), .variant(value)])
    }
}
