import MonitorContract
import Probe

/// What the Monitor reports: the verdict, as the contract lists its values.
public typealias Status = MonitorContract.Status
public typealias Connectivity = MonitorContract.Connectivity

/// The read-only properties of org.netobserver.Monitor, as one value.
public struct MonitorState: Equatable, Sendable {
    public var status: Status = .unknown
    public var interface = ""
    public var address = ""
    public var reason = ""
    public var roundTripTime: UInt64 = 0
    public var packetLoss: Double = 0
    public var lastChange: UInt64 = 0
    /// Probes sent and answered since the daemon started; they only grow.
    public var probesSent: UInt64 = 0
    public var probesAnswered: UInt64 = 0
    /// The route's modem generation ("2g" … "5g"), "" when unknown or not a modem.
    public var accessTechnology = ""
    /// The route's link costs money by the byte.
    public var metered = false
    public var connectivity: Connectivity = .unknown
    /// How the host was last heard from: "icmp", "tcp", or "" before its first answer.
    public var probeMethod = ""
    /// Where a captive portal wants the user to sign in; "" unless Connectivity is `portal`.
    public var portalURL = ""
    /// What the machine's own TCP traffic says about the route to Host.
    public var traffic: Traffic = .none
    /// Scheduled probes skipped because traffic flowed, since the daemon started; only grows.
    public var probesSkipped: UInt64 = 0

    public init() {}

    public var reachable: Bool { status.isConnected }

    /// The properties whose values differ between two states.
    public func changedProperties(from old: MonitorState) -> [MonitorContract.Property] {
        var changed: [MonitorContract.Property] = []
        if status != old.status { changed += [.status, .reachable] }
        if interface != old.interface { changed.append(.interface) }
        if address != old.address { changed.append(.address) }
        if reason != old.reason { changed.append(.reason) }
        if roundTripTime != old.roundTripTime { changed.append(.roundTripTime) }
        if packetLoss != old.packetLoss { changed.append(.packetLoss) }
        if lastChange != old.lastChange { changed.append(.lastChange) }
        if probesSent != old.probesSent { changed.append(.probesSent) }
        if probesAnswered != old.probesAnswered { changed.append(.probesAnswered) }
        if accessTechnology != old.accessTechnology { changed.append(.accessTechnology) }
        if metered != old.metered { changed.append(.metered) }
        if connectivity != old.connectivity { changed.append(.connectivity) }
        if probeMethod != old.probeMethod { changed.append(.probeMethod) }
        if portalURL != old.portalURL { changed.append(.portalURL) }
        if traffic != old.traffic { changed.append(.traffic) }
        if probesSkipped != old.probesSkipped { changed.append(.probesSkipped) }
        return changed
    }
}
