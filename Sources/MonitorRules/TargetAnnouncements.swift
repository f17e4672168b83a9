import NetAddress
import ReachabilityRules
import Timekeeping

/// What the network's routers and resolver announce, as one target follows it: the NAT64 prefix of the network
/// the route to Host uses (and IPv4 through it), and the captive-portal API shown while the route is replaced.
extension TargetCore {
    /// INTERFACE.md "NAT64": the prefix from the routers of the IPv6 route's network (of IPv4's when Host has no
    /// IPv6 route to watch) (RFC 8781), else,
    /// with no IPv4 default route, from `ipv4only.arpa` (RFC 7050, asked once per network and hourly).
    /// While IPv4 has no default route, IPv4 addresses are probed through it.
    mutating func followNat64(now: Instant, _ step: inout Step) {
        let awaitedFirstAnswer = firstAnswerCame
        firstAnswerCame = false
        if let until = discoveryPendingUntil, until <= now {
            discoveryPendingUntil = nil
            step.publish = true
        }
        // The route is read where it is (this runs at every step; the route is copied only when it is a candidate).
        let routed = routedFamilies ?? []
        // The network the route to Host uses: IPv6's; a Host with no IPv6 route to watch (an IPv4 literal, a name
        // with no AAAA) uses IPv4's.
        let advertised: Nat64Prefix?
        if case .none = ipv6.monitor.route {
            advertised = ipv4.monitor.advertisedNat64Prefix
        } else {
            advertised = ipv6.monitor.advertisedNat64Prefix
        }
        // Two names, not one joined: this runs at every step, and a joined name is a new string each time.
        let network = ipv6.monitor.route.map { Nat64Network(interface: $0.interface, source: $0.source) }
        if advertised == nil, !routed.contains(.v4), routed.contains(.v6), watches(.v4), let route = ipv6.monitor.route,
            route.usable
        {
            if network != discoveryNetwork || isDue(.nat64Discovery, now: now) {
                if network != discoveryNetwork { discovered = nil }
                discoveryNetwork = network
                discoveryAt = now &+ Self.nat64Discovery
                discoveryGeneration &+= 1
                discoveryPendingUntil = now &+ max(.seconds(5), settings.timeout)
                step.actions.append(.resolveNat64(generation: discoveryGeneration))
            }
        } else if advertised == nil, !routed.contains(.v4), routed.contains(.v6), watches(.v4),
            ipv6.monitor.route == nil
        {
            // IPv6 is routed but its route's verdict is yet to come: the question will be asked then. Until then, or
            // its limit, IPv4 has no verdict either (a `none` now would be false on a DNS64-only network).
            if discoveryPendingUntil == nil, discoveryAt == nil {
                discoveryPendingUntil = now &+ max(.seconds(5), settings.timeout)
            }
        } else if discoveryAt != nil || discoveryPendingUntil != nil {
            discoveryAt = nil
            discoveryNetwork = nil
            discovered = nil
            discoveryPendingUntil = nil
        }
        var known: (prefix: Nat64Prefix, source: Nat64Source)? =
            advertised.map { ($0, .ra) } ?? discovered.map { ($0, .dns) }
        // A prefix the router stopped advertising stays while `ipv4only.arpa` is asked again on the same network: the
        // path is dropped on the network's word, not in the moment between two of its answers.
        if known == nil, discoveryPendingUntil != nil, nat64Network == network { known = nat64 }
        // An advertised prefix outlives its network's IPv6 route by 2 s: a route deleted and added again changes
        // nothing (INTERFACE.md, "Which advertisements count").
        if known == nil, let kept = nat64, kept.source == .ra,
            (ipv6.monitor.route ?? ipv4.monitor.route)?.usable != true
        {
            let until = nat64KeptUntil ?? now &+ Self.routeReplacement
            nat64KeptUntil = until
            if until > now { known = kept } else { nat64KeptUntil = nil }
        } else {
            nat64KeptUntil = nil
        }
        if known?.prefix != nat64?.prefix || known?.source != nat64?.source {
            nat64 = known
            step.publish = true
        }
        nat64Network = known == nil ? nil : network
        let wanted = routed.contains(.v4) ? nil : known?.prefix
        if wanted != ipv4.monitor.nat64 {
            feed(.v4, .nat64(wanted), now: now, &step)
            // IPv4 showed `unknown` while the first answer was awaited: its `none` from before was never shown.
            if awaitedFirstAnswer { change(.v4) { $0.dropHeldVerdict() } }
        }
    }

    /// IPv4 has no route of its own and its only way, a NAT64 prefix, is being asked of `ipv4only.arpa`.
    var awaitingNat64Prefix: Bool {
        discoveryPendingUntil != nil && nat64 == nil && !(routedFamilies ?? []).contains(.v4)
    }

    /// The captive-portal API of the interface the route to Host went through stays shown for `routeReplacement`
    /// while no route does.
    mutating func followPortal(now: Instant, _ step: inout Step) {
        // IPv6's route first, then IPv4's; read where they are (no array of copies: this runs at every step).
        let usable: String? =
            if watches(.v6), ipv6.monitor.route?.usable == true {
                ipv6.monitor.route?.interface
            } else if watches(.v4), ipv4.monitor.route?.usable == true {
                ipv4.monitor.route?.interface
            } else {
                nil
            }
        if let usable {
            portalInterface = usable
            portalKeptUntil = nil
            return
        }
        guard portalInterface != nil else { return }
        let until = portalKeptUntil ?? now &+ Self.routeReplacement
        portalKeptUntil = until
        if until <= now {
            portalInterface = nil
            portalKeptUntil = nil
            step.publish = true
        }
    }
}

/// The network a NAT64 prefix was learned on: the IPv6 route's interface and source address.
struct Nat64Network: Equatable, Sendable {
    var interface: String
    var source: String
}
