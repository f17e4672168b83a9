import NetAddress
import ProbeRules
import ReachabilityRules

/// Where the path to Host breaks (INTERFACE.md "Where it broke"): published as `Blame`, "" (nil) while
/// Connectivity is `full` or `unknown`, or while the diagnosis has not found the place yet.
public enum Blame: String, CaseIterable, Sendable {
    /// No carrier, no route, no usable address.
    case link
    /// The next hop does not answer its own neighbour discovery.
    case gateway
    /// The gateway answers; nothing past it does.
    case upstream
    /// The path past the gateway carries packets; Host does not answer.
    case host
    /// Host's known address answers; its name no longer resolves (or never did, over a usable route).
    case dns
    case portal
    /// The HTTP check fails for a reason that is not a portal.
    case check
}

/// The facts Blame is read from, each as a driver reported it.
public struct BlameFacts: Equatable, Sendable {
    public var connectivity: Connectivity
    /// Host's name has no address (the lookup failed).
    public var lookupFailed = false
    /// The path has a usable route (to Host's address, or a default route before it resolves).
    public var routeUsable = false
    /// Host answers the probes.
    public var hostAnswering = false
    /// DNS health: the known address answers, lookups fail.
    public var resolverBroken = false
    /// The route has a next hop (not on-link).
    public var hasGateway = false
    /// The neighbour check's last answer; nil when none applies or it has not answered yet.
    public var neighbor: NeighborAnswer?
    /// The link resolves neighbours, so a neighbour check applies.
    public var neighborChecked = false
    /// The TTL-limited probe's answer; nil while none.
    public var beyond: BeyondAnswer?

    public init(connectivity: Connectivity) { self.connectivity = connectivity }
}

/// Blame as one table over the facts, in the manner of `gio/verdict.c`: free of I/O, of clocks and of state.
public enum BlameRules {
    /// nil: "" (full, unknown, or the place is still being found).
    public static func blame(_ facts: BlameFacts) -> Blame? {
        switch facts.connectivity {
        case .full, .unknown:
            return nil
        case .portal:
            return .portal
        case .none:
            // A lookup that fails over a usable route is the resolver's fault; anything else is the link's.
            return facts.lookupFailed && facts.routeUsable ? .dns : .link
        case .limited:
            if facts.resolverBroken { return .dns }
            if facts.hostAnswering { return .check }
            guard facts.hasGateway else { return .host }
            if facts.neighborChecked {
                switch facts.neighbor {
                case nil: return nil
                case .unreachable?: return .gateway
                case .reachable?, .unknown?: break
                }
            }
            switch facts.beyond {
            case nil: return nil
            case .carried?: return .host
            case .silent?: return .upstream
            }
        }
    }
}

extension BlameRules {
    /// Reason for the places only the diagnosis knows, naming them; nil: the path's own Reason stands.
    public static func reason(_ blame: Blame?, gateway: IPAddress, interface: String) -> String? {
        switch blame {
        case .gateway?: "gateway \(gateway) does not answer on \(interface)"
        case .upstream?: "gateway \(gateway) answers on \(interface); nothing past it does"
        default: nil
        }
    }
}
