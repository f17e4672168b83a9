import NetAddress
import Timekeeping

/// The target core's timers: each watched family's path (its own table, `PathTimer`), and the
/// hourly NAT64 discovery. `.timeout` runs the paths due, IPv4's first; the discovery is taken by
/// `followNat64` at the end of every step.
public enum TargetTimer: CaseIterable, Hashable, Sendable {
    case ipv4Path
    case ipv6Path
    /// `ipv4only.arpa` asked again on the same network (RFC 7050).
    case nat64Discovery
    /// The limit of the `ipv4only.arpa` query under way.
    case nat64DiscoveryLimit
    /// The end of an advertised prefix kept while its network's IPv6 route is replaced.
    case nat64RouteGone
    /// The end of the captive-portal API kept while the route to Host is replaced.
    case portalRouteGone

    /// The family whose path the timer is; nil for the discovery.
    var family: IPFamily? {
        switch self {
        case .ipv4Path: .v4
        case .ipv6Path: .v6
        case .nat64Discovery, .nat64DiscoveryLimit, .nat64RouteGone, .portalRouteGone: nil
        }
    }
}

extension TargetCore: TimerTable {
    public func deadline(_ timer: TargetTimer) -> Instant? {
        switch timer {
        case .ipv4Path: watches(.v4) ? ipv4.nextWakeup : nil
        case .ipv6Path: watches(.v6) ? ipv6.nextWakeup : nil
        case .nat64Discovery: discoveryAt
        case .nat64DiscoveryLimit: discoveryPendingUntil
        case .nat64RouteGone: nat64KeptUntil
        case .portalRouteGone: portalKeptUntil
        }
    }
}
