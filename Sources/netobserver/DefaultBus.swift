import DBusKit
import EventLoop
import MonitorContract

/// INTERFACE.md, "Command lines": with no bus flag the client reads the system service whenever there is one — the
/// system bus when org.netobserver.Monitor has an owner there or can be activated there, else the session bus —
/// so `netobserver status` on an installed system never starts a private daemon of its own.
enum DefaultBus {
    static func connect(loop: MainLoop) throws(DBusError) -> (BusConnection, BusAddress) {
        if let system = try? BusConnection(.system, loop: loop), servesTheMonitor(system) {
            return (system, .system)
        }
        return (try BusConnection(.session, loop: loop), .session)
    }

    /// Whether the bus has the service now, or would start it on the first call.
    static func servesTheMonitor(_ bus: BusConnection) -> Bool {
        let name = DBusValue.string(MonitorContract.busName)
        if let reply = try? bus.callBlocking(Message.busCall("NameHasOwner", [name]), timeoutMilliseconds: 2_000),
            case .boolean(true)? = try? reply.arguments().first
        {
            return true
        }
        guard
            let reply = try? bus.callBlocking(Message.busCall("ListActivatableNames", []), timeoutMilliseconds: 2_000),
            case .array(_, let names)? = try? reply.arguments().first
        else { return false }
        return names.contains(name)
    }
}
