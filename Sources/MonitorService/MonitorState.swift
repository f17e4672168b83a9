/// What the Monitor reports: the verdict and how it was reached.
public enum Status: String, CaseIterable, Sendable {
    case unknown, none, ethernet, wifi, cellular, vpn, other

    /// True for the kinds that mean "connected".
    public var isConnected: Bool {
        switch self {
        case .unknown, .none: false
        default: true
        }
    }
}

/// The read-only properties of org.netobserver.Monitor, as one value.
public struct MonitorState: Equatable, Sendable {
    public var status: Status = .unknown
    public var interface = ""
    public var address = ""
    public var reason = ""
    public var roundTripTime: UInt64 = 0
    public var packetLoss: Double = 0
    public var lastChange: UInt64 = 0

    public init() {}

    public var reachable: Bool { status.isConnected }

    /// The property names whose values differ between two states.
    public func changedProperties(from old: MonitorState) -> [String] {
        var names: [String] = []
        if status != old.status { names += ["Status", "Reachable"] }
        if interface != old.interface { names.append("Interface") }
        if address != old.address { names.append("Address") }
        if reason != old.reason { names.append("Reason") }
        if roundTripTime != old.roundTripTime { names.append("RoundTripTime") }
        if packetLoss != old.packetLoss { names.append("PacketLoss") }
        if lastChange != old.lastChange { names.append("LastChange") }
        return names
    }
}
