import Foundation
import Glibc

/// A python3-dbusmock service on a test's private bus (handed to it as the system
/// bus), stopped by its PID. Built up and changed with busctl calls on its
/// org.freedesktop.DBus.Mock interface.
public final class MockService {
    public let name: String
    private let bus: PrivateBus
    private let process = Process()

    /// `arguments`: dbusmock's own (`-m NAME PATH INTERFACE`, or `-t TEMPLATE`).
    public init(bus: PrivateBus, name: String, arguments: [String]) throws {
        self.bus = bus
        self.name = name
        process.executableURL = URL(fileURLWithPath: Paths.python)
        process.arguments = ["-m", "dbusmock", "--system"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["DBUS_SYSTEM_BUS_ADDRESS": bus.address]) {
            $1
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 {
            let names = try runCommand(["busctl", "--address=\(bus.address)", "list", "--acquired", "--no-legend"])
                .stdout
            if names.split(separator: "\n").contains(where: { $0.hasPrefix(name + " ") }) { return }
            usleep(10_000)
        }
        stop()
        throw NSError(
            domain: "dbusmock", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(name) did not appear on the bus"])
    }

    /// ModemManager with its ObjectManager, as `org.freedesktop.ModemManager1` is on a real system.
    public static func modemManager(bus: PrivateBus) throws -> MockService {
        try MockService(
            bus: bus, name: "org.freedesktop.ModemManager1",
            arguments: [
                "-m", "org.freedesktop.ModemManager1", "/org/freedesktop/ModemManager1",
                "org.freedesktop.ModemManager1",
            ])
    }

    /// NetworkManager from dbusmock's template.
    public static func networkManager(bus: PrivateBus) throws -> MockService {
        try MockService(bus: bus, name: "org.freedesktop.NetworkManager", arguments: ["-t", "networkmanager"])
    }

    public var pid: Int32 { process.processIdentifier }

    /// `busctl call` on the mock; `arguments` in busctl's notation after the signature.
    @discardableResult
    public func call(
        _ path: String, _ interface: String, _ method: String, _ signature: String = "",
        _ arguments: [String] = []
    ) throws -> String {
        let outcome = try runCommand(
            ["busctl", "--address=\(bus.address)", "call", name, path, interface, method]
                + (signature.isEmpty ? [] : [signature] + arguments))
        guard outcome.status == 0 else {
            throw NSError(
                domain: "busctl", code: Int(outcome.status),
                userInfo: [NSLocalizedDescriptionKey: "\(method) on \(path): \(outcome.stderr)"])
        }
        return outcome.stdout
    }

    static let modemManagerPath = "/org/freedesktop/ModemManager1"
    static let modemInterface = "org.freedesktop.ModemManager1.Modem"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"

    /// A ModemManager modem at `…/Modem/N` with these net ports (and a control port) and
    /// AccessTechnologies, announced with InterfacesAdded as ModemManager does.
    public func addModem(_ number: Int, netPorts: [String], accessTechnologies: UInt32) throws {
        let path = "\(Self.modemManagerPath)/Modem/\(number)"
        let properties =
            ["2", "Ports", "a(su)", "\(netPorts.count + 1)", "cdc-wdm\(number)", "6"] + netPorts.flatMap { [$0, "2"] }
            + ["AccessTechnologies", "u", "\(accessTechnologies)"]
        try call(
            Self.modemManagerPath, "org.freedesktop.DBus.Mock", "AddObject", "ssa{sv}a(ssss)",
            [path, Self.modemInterface] + properties + ["0"])
        try call(
            Self.modemManagerPath, "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
            [
                Self.objectManager, "InterfacesAdded", "oa{sa{sv}}", "2", "o", path, "a{sa{sv}}", "1",
                Self.modemInterface,
            ]
                + properties)
    }

    public func setAccessTechnologies(modem number: Int, _ mask: UInt32) throws {
        try call(
            "\(Self.modemManagerPath)/Modem/\(number)", "org.freedesktop.DBus.Mock", "UpdateProperties", "sa{sv}",
            [Self.modemInterface, "1", "AccessTechnologies", "u", "\(mask)"])
    }

    /// The modem goes (unplugged), with InterfacesRemoved.
    public func removeModem(_ number: Int) throws {
        let path = "\(Self.modemManagerPath)/Modem/\(number)"
        try call(Self.modemManagerPath, "org.freedesktop.DBus.Mock", "RemoveObject", "s", [path])
        try call(
            Self.modemManagerPath, "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
            [Self.objectManager, "InterfacesRemoved", "oas", "2", "o", path, "as", "1", Self.modemInterface])
    }

    /// A NetworkManager ethernet device for `interface`, with a Metered property (NMMetered).
    public func addEthernetDevice(_ device: String, interface: String, metered: UInt32) throws {
        try call(
            "/org/freedesktop", "org.freedesktop.DBus.Mock", "AddEthernetDevice", "ssi", [device, interface, "100"])
        let path = "/org/freedesktop/NetworkManager/Devices/\(device)"
        try call(
            path, "org.freedesktop.DBus.Mock", "AddProperty", "ssv",
            ["org.freedesktop.NetworkManager.Device", "Metered", "u", "0"])
        try setMetered(device, metered)
    }

    public func setMetered(_ device: String, _ metered: UInt32) throws {
        try call(
            "/org/freedesktop/NetworkManager/Devices/\(device)", "org.freedesktop.DBus.Mock", "UpdateProperties",
            "sa{sv}",
            ["org.freedesktop.NetworkManager.Device", "1", "Metered", "u", "\(metered)"])
    }

    /// The device's DHCPv4 lease carried `options` (NetworkManager's names: `captive_portal` for option 114): a
    /// DHCP4Config object announced on the ObjectManager, and the device's Dhcp4Config pointing at it (set
    /// quietly: dbusmock's UpdateProperties cannot carry an object path, so call this before the daemon starts).
    public func setDHCP4Options(_ device: String, number: Int, _ options: [String: String]) throws {
        let path = "/org/freedesktop/NetworkManager/DHCP4Config/\(number)"
        let entries = ["\(options.count)"] + options.sorted { $0.key < $1.key }.flatMap { [$0.key, "s", $0.value] }
        try call(
            "/org/freedesktop", "org.freedesktop.DBus.Mock", "AddObject", "ssa{sv}a(ssss)",
            [path, "org.freedesktop.NetworkManager.DHCP4Config", "1", "Options", "a{sv}"] + entries + ["0"])
        try call(
            "/org/freedesktop", "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
            [
                Self.objectManager, "InterfacesAdded", "oa{sa{sv}}", "2", "o", path, "a{sa{sv}}", "1",
                "org.freedesktop.NetworkManager.DHCP4Config", "1", "Options", "a{sv}",
            ] + entries)
        let devicePath = "/org/freedesktop/NetworkManager/Devices/\(device)"
        if (try? call(
            devicePath, "org.freedesktop.DBus.Mock", "AddProperty", "ssv",
            ["org.freedesktop.NetworkManager.Device", "Dhcp4Config", "o", path])) == nil
        {
            try call(
                devicePath, "org.freedesktop.DBus.Properties", "Set", "ssv",
                ["org.freedesktop.NetworkManager.Device", "Dhcp4Config", "o", path])
        }
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
