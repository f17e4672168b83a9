import CDBus
import EventLoop
import Timekeeping

/// Connects one libdbus connection's watches, timeouts and dispatch status to
/// a MainLoop, the way dbus-gmain and BlueZ's mainloop do.
///
/// libdbus owns this object (it is handed over retained, with a free function),
/// so callbacks never reach a freed object; it holds the loop unowned because
/// the loop outlives every connection on it.
final class LoopBinding {
    unowned let loop: MainLoop
    let connection: OpaquePointer
    private var dispatchScheduled = false

    init(loop: MainLoop, connection: OpaquePointer) {
        self.loop = loop
        self.connection = connection
    }

    /// Installs the callbacks; libdbus keeps the binding alive until they are replaced.
    static func install(loop: MainLoop, connection: OpaquePointer) -> Bool {
        let binding = LoopBinding(loop: loop, connection: connection)
        func retained() -> UnsafeMutableRawPointer { Unmanaged.passRetained(binding).toOpaque() }
        let watches = dbus_connection_set_watch_functions(
            connection, addWatch, removeWatch, toggleWatch, retained(), releaseBinding)
        let timeouts = dbus_connection_set_timeout_functions(
            connection, addTimeout, removeTimeout, toggleTimeout, retained(), releaseBinding)
        dbus_connection_set_dispatch_status_function(connection, dispatchStatusChanged, retained(), releaseBinding)
        binding.scheduleDispatchIfNeeded(dbus_connection_get_dispatch_status(connection))
        return watches != 0 && timeouts != 0
    }

    /// Removes the callbacks (each free function then releases its reference).
    static func uninstall(connection: OpaquePointer) {
        dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
    }

    static func from(_ data: UnsafeMutableRawPointer?) -> LoopBinding? {
        data.map { Unmanaged<LoopBinding>.fromOpaque($0).takeUnretainedValue() }
    }

    // MARK: Dispatch

    func scheduleDispatchIfNeeded(_ status: DBusDispatchStatus) {
        // Never dispatch from inside this callback: libdbus holds its lock here.
        guard status == DBUS_DISPATCH_DATA_REMAINS, !dispatchScheduled else { return }
        dispatchScheduled = true
        let connection = self.connection
        dbus_connection_ref(connection)
        loop.atEndOfTurn { [self] in
            dispatchScheduled = false
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
            dbus_connection_unref(connection)
        }
    }

    // MARK: Watches

    final class WatchSlot {
        var source: IOSource?
    }

    static func interest(of watch: OpaquePointer) -> IOEvents {
        guard dbus_watch_get_enabled(watch) != 0 else { return [] }
        let flags = dbus_watch_get_flags(watch)
        var interest: IOEvents = []
        if flags & CDBus_WATCH_READABLE != 0 { interest.insert(.readable) }
        if flags & CDBus_WATCH_WRITABLE != 0 { interest.insert(.writable) }
        return interest
    }

    func add(watch: OpaquePointer) -> Bool {
        let slot = WatchSlot()
        let fd = dbus_watch_get_unix_fd(watch)
        do {
            slot.source = try loop.watch(fd: fd, interest: Self.interest(of: watch)) { events in
                var flags: UInt32 = 0
                if events.contains(.readable) { flags |= CDBus_WATCH_READABLE }
                if events.contains(.writable) { flags |= CDBus_WATCH_WRITABLE }
                if events.contains(.error) { flags |= CDBus_WATCH_ERROR }
                if events.contains(.hangup) { flags |= CDBus_WATCH_HANGUP }
                // libdbus may remove and free the watch in here; nothing touches it after.
                dbus_watch_handle(watch, flags)
            }
        } catch {
            return false
        }
        dbus_watch_set_data(watch, Unmanaged.passRetained(slot).toOpaque(), releaseWatchSlot)
        return true
    }

    func slot(of watch: OpaquePointer) -> WatchSlot? {
        dbus_watch_get_data(watch).map { Unmanaged<WatchSlot>.fromOpaque($0).takeUnretainedValue() }
    }

    func remove(watch: OpaquePointer) {
        guard let slot = slot(of: watch), let source = slot.source else { return }
        loop.remove(source)
        slot.source = nil
    }

    func toggle(watch: OpaquePointer) {
        guard let source = slot(of: watch)?.source else { return }
        try? loop.setInterest(source, Self.interest(of: watch))
    }

    // MARK: Timeouts

    final class TimeoutSlot {
        var timer: LoopTimer?
    }

    func timeoutSlot(of timeout: OpaquePointer) -> TimeoutSlot? {
        dbus_timeout_get_data(timeout).map { Unmanaged<TimeoutSlot>.fromOpaque($0).takeUnretainedValue() }
    }

    func arm(_ slot: TimeoutSlot, _ timeout: OpaquePointer) {
        if let timer = slot.timer { loop.cancel(timer) }
        slot.timer = nil
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let interval = Duration.milliseconds(max(0, dbus_timeout_get_interval(timeout)))
        // libdbus timeouts repeat until removed or disabled.
        slot.timer = loop.schedule(after: interval, repeats: true) {
            dbus_timeout_handle(timeout)
        }
    }

    func add(timeout: OpaquePointer) -> Bool {
        let slot = TimeoutSlot()
        dbus_timeout_set_data(timeout, Unmanaged.passRetained(slot).toOpaque(), releaseTimeoutSlot)
        arm(slot, timeout)
        return true
    }

    func remove(timeout: OpaquePointer) {
        guard let slot = timeoutSlot(of: timeout), let timer = slot.timer else { return }
        loop.cancel(timer)
        slot.timer = nil
    }

    func toggle(timeout: OpaquePointer) {
        guard let slot = timeoutSlot(of: timeout) else { return }
        arm(slot, timeout)
    }
}

// C entry points: no captures, everything comes through the user-data pointer.

private func releaseBinding(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<LoopBinding>.fromOpaque(data).release()
}

private func releaseWatchSlot(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<LoopBinding.WatchSlot>.fromOpaque(data).release()
}

private func releaseTimeoutSlot(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<LoopBinding.TimeoutSlot>.fromOpaque(data).release()
}

private func addWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    guard let watch, let binding = LoopBinding.from(data) else { return 0 }
    return binding.add(watch: watch) ? 1 : 0
}

private func removeWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let watch, let binding = LoopBinding.from(data) else { return }
    binding.remove(watch: watch)
}

private func toggleWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let watch, let binding = LoopBinding.from(data) else { return }
    binding.toggle(watch: watch)
}

private func addTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    guard let timeout, let binding = LoopBinding.from(data) else { return 0 }
    return binding.add(timeout: timeout) ? 1 : 0
}

private func removeTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let timeout, let binding = LoopBinding.from(data) else { return }
    binding.remove(timeout: timeout)
}

private func toggleTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let timeout, let binding = LoopBinding.from(data) else { return }
    binding.toggle(timeout: timeout)
}

private func dispatchStatusChanged(
    _ connection: OpaquePointer?, _ status: DBusDispatchStatus, _ data: UnsafeMutableRawPointer?
) {
    LoopBinding.from(data)?.scheduleDispatchIfNeeded(status)
}
