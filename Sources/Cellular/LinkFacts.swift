import DBusKit
import MonitorRules

extension LinkFactsTable {
    public static let modemInterface = "org.freedesktop.ModemManager1.Modem"
    public static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    public static let dhcp4Interface = "org.freedesktop.NetworkManager.DHCP4Config"
    /// The name NetworkManager gives DHCPv4 option 114 (RFC 8910) in a DHCP4Config's Options.
    static let captivePortalOption = "captive_portal"
    /// MM_MODEM_PORT_TYPE_NET
    static let netPortType: UInt32 = 2
    /// NM_METERED_YES and NM_METERED_GUESS_YES
    static let meteredValues: Set<UInt32> = [1, 3]

    /// From ModemManager's modems (`Ports` a(su), `AccessTechnologies` u) and
    /// NetworkManager's devices (`Interface`, `IpInterface` s, `Metered` u, `Dhcp4Config` o) and
    /// DHCP4Configs (`Options` a{sv}: `captive_portal` s). Values of another type count as absent.
    public init(modems: some Collection<RemoteObject>, devices: some Collection<RemoteObject>) {
        var byInterface: [String: LinkFacts] = [:]
        for modem in modems.sorted(by: { $0.path < $1.path }) {
            guard case .array(_, let ports)? = modem.property("Ports", of: Self.modemInterface) else { continue }
            let mask = modem.property("AccessTechnologies", of: Self.modemInterface)?.uint32Value ?? 0
            for port in ports {
                guard case .structure(let fields) = port, fields.count == 2, let name = fields[0].stringValue,
                    fields[1].uint32Value == Self.netPortType, !name.isEmpty
                else { continue }
                var facts = byInterface[name] ?? LinkFacts()
                facts.isModem = true
                facts.generation = max(facts.generation, CellularGeneration(accessTechnologies: mask))
                byInterface[name] = facts
            }
        }
        var dhcpPortals: [String: String] = [:]
        for config in devices {
            guard let options = config.property("Options", of: Self.dhcp4Interface)?.propertyMap,
                let uri = options[Self.captivePortalOption]?.stringValue, !uri.isEmpty,
                uri.utf8.count <= 1024, uri.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            else { continue }
            dhcpPortals[config.path] = uri
        }
        for device in devices {
            // The lease is on the interface that carries IP (IpInterface), else on Interface.
            guard case .objectPath(let path)? = device.property("Dhcp4Config", of: Self.deviceInterface),
                let uri = dhcpPortals[path],
                let name = ["IpInterface", "Interface"].lazy.compactMap({
                    device.property($0, of: Self.deviceInterface)?.stringValue
                })
                .first(where: { !$0.isEmpty })
            else { continue }
            byInterface[name, default: LinkFacts()].dhcpPortalAPI = uri
        }
        for device in devices {
            guard let metered = device.property("Metered", of: Self.deviceInterface)?.uint32Value,
                Self.meteredValues.contains(metered)
            else { continue }
            // A modem's device names its control port in Interface and the data port in IpInterface.
            let names = ["Interface", "IpInterface"].compactMap {
                device.property($0, of: Self.deviceInterface)?.stringValue
            }
            for name in Set(names) where !name.isEmpty {
                byInterface[name, default: LinkFacts()].meteredByNetworkManager = true
            }
        }
        self.init(byInterface)
    }
}

private func max(_ a: CellularGeneration?, _ b: CellularGeneration?) -> CellularGeneration? {
    switch (a, b) {
    case (nil, let other), (let other, nil): other
    case (let a?, let b?): Swift.max(a, b)
    }
}
