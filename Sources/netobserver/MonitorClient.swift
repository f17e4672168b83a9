import DBusKit
import EventLoop
import Glibc
import MonitorClientCore
import MonitorContract
import ProbeRules

/// Talks to org.netobserver.Monitor for the command line.
struct MonitorClient {
    let connection: BusConnection
    let bus: BusAddress
    /// The target's object: the default one, or an added one.
    var path = MonitorContract.objectPath

    /// Why the service could not be used, in words for the user (exit status 1).
    struct Failure: Error {
        let message: String
    }

    func failure(_ error: DBusError) -> Failure {
        let gone = [
            "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
            "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Disconnected",
        ]
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

    func call(
        _ interface: String, _ member: String, _ arguments: [DBusValue], timeoutMilliseconds: Int32 = 25_000
    ) throws(Failure) -> [DBusValue] {
        do {
            let message = try Message.methodCall(
                destination: MonitorContract.busName, path: path,
                interface: interface, member: member)
            try message.append(arguments)
            return try connection.callBlocking(message, timeoutMilliseconds: timeoutMilliseconds).arguments()
        } catch {
            throw failure(error)
        }
    }

    /// A method of org.netobserver.Monitor.
    func call(
        _ method: MonitorContract.Method, _ arguments: [DBusValue], timeoutMilliseconds: Int32
    ) throws(Failure) -> [DBusValue] {
        try call(MonitorContract.interface, method.name, arguments, timeoutMilliseconds: timeoutMilliseconds)
    }

    func properties() throws(Failure) -> [String: DBusValue] {
        guard
            let values = try call(MonitorContract.propertiesInterface, "GetAll", [.string(MonitorContract.interface)])
                .first?.propertyMap
        else {
            throw Failure(message: "the service answered GetAll with something else")
        }
        return values
    }

    /// The same client, for another target's object.
    func at(_ path: String) -> MonitorClient {
        var copy = self
        copy.path = path
        return copy
    }

    /// Every target's path, the default first.
    func targetPaths() throws(Failure) -> [String] {
        let reply = try at(MonitorContract.objectPath).call(
            MonitorContract.propertiesInterface, "Get",
            [
                .string(MonitorContract.Targets.interface),
                .string(MonitorContract.Targets.targetsProperty),
            ])
        guard case .array(_, let paths)? = reply.first?.unwrappedVariant else { return [MonitorContract.objectPath] }
        return [MonitorContract.objectPath] + paths.compactMap { if case .objectPath(let p) = $0 { p } else { nil } }
    }

    /// Every target's path and properties, the default first.
    func allSnapshots() throws(Failure) -> [(path: String, snapshot: Snapshot)] {
        var result: [(path: String, snapshot: Snapshot)] = []
        for path in try targetPaths() {
            let target = at(path)
            var snapshot = Snapshot(try target.properties())
            // The outages kept, by Blame (a service without GetHistory has none to count).
            let outages = HistoryText.entries(
                (try? target.call(
                    .getHistory, [.uint32(MonitorContract.historyLimit)],
                    timeoutMilliseconds: 25_000)) ?? [])
            for outage in outages { snapshot.outageCounts[outage.blame, default: 0] += 1 }
            result.append((path, snapshot))
        }
        return result
    }

    /// Calls `handler` with the path and changed values of every PropertiesChanged of this
    /// target (of every target with `allTargets`); quits the loop (status 1) when the bus goes away.
    /// Only the current owner of the service's name is heard: on the system bus anyone may send
    /// a signal to this client's unique name, whatever its match rules say.
    func onPropertiesChanged(
        loop: MainLoop, allTargets: Bool = false,
        _ handler: @escaping (_ path: String, _ changed: [String: DBusValue]) -> Void
    ) {
        let scope = allTargets ? "path_namespace='\(MonitorContract.objectPath)'" : "path='\(path)'"
        connection.addMatch(
            "type='signal',sender='\(MonitorContract.busName)',\(scope),"
                + "interface='\(MonitorContract.propertiesInterface)',member='PropertiesChanged'")
        // Known before any signal is heard, so none is lost to the answer's delay; then followed.
        let owner = NameOwnerWatch(connection: connection, name: MonitorContract.busName)
        owner.askNow()
        let own = path
        connection.onSignal = { message in
            guard let signal = ServiceSignal(message, owner: owner.owner, path: own, allTargets: allTargets) else {
                return
            }
            handler(signal.path, signal.changed)
        }
        connection.onDisconnected = {
            writeLine("netobserver: the bus went away", to: 2)
            loop.quit(status: 1)
        }
    }

    func set(_ property: MonitorContract.Property, _ value: DBusValue) throws(Failure) {
        _ = try call(
            MonitorContract.propertiesInterface, "Set",
            [.string(MonitorContract.interface), .string(property.name), .variant(value)])
    }
}
