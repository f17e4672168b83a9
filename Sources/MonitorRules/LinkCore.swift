import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// Everything the service knows of one link, without I/O, for as long as the link lives: its name, what
/// ModemManager and NetworkManager say of it, what its routers (their captive-portal API and NAT64 prefix) and its
/// DHCP lease announce, its captive-portal
/// API's follower, and the neighbour checks of its gateways that every path routed over it shares. `ServiceCore` holds one per link, as quinn-proto's endpoint holds its connections; what it
/// decides comes out as the link's own actions and, when what targets read of it changed, a new `view`.
public struct LinkCore: Sendable {
    public let id: LinkID
    public private(set) var name: String
    /// ModemManager's and NetworkManager's word on the link (DHCP's option 114 among it); nil: they say nothing.
    private var services: LinkFacts?
    /// The captive-portal API the link's routers announce (RFC 8910 option 37).
    private var routerPortalAPI: String?
    /// The NAT64 prefix the link's routers advertise (RFC 8781), until its lifetime ends.
    private var routerNat64Prefix: Nat64Prefix?
    private var portal = CapportFollower()
    public private(set) var neighbors = LinkNeighbors()

    public enum Event: Sendable {
        /// The kernel calls the link so now (its first name, or a new one), and this is what the services and its
        /// routers say of that name.
        case named(String, services: LinkFacts?, routerPortalAPI: String?, nat64Prefix: Nat64Prefix?)
        /// What ModemManager and NetworkManager say of it now.
        case servicesSaid(LinkFacts?)
        /// What its routers announce now.
        case routerAnnounced(portalAPI: String?)
        /// The NAT64 prefix its routers advertise now.
        case routerAdvertised(nat64Prefix: Nat64Prefix?)
        /// Fetch `generation` of its captive-portal API ended so.
        case portalAPIFetched(generation: UInt64, Result<CapportAnswer, StrictJSON.Malformed>)
        /// `path` asks its next hop `gateway` on this link (see `LinkNeighbors.ask`).
        case neighborAsked(
            ServiceCore.PathKey, gateway: IPAddress, source: String, generation: UInt64, routine: Bool)
        /// Check `number` of `gateway` answered so.
        case neighborChecked(gateway: IPAddress, number: UInt64, NeighborAnswer)
        /// `path` waits for none of this link's answers any more (it asks over another link).
        case neighborWithdrawn(ServiceCore.PathKey)
        /// Target `target` is gone.
        case targetGone(Int)
        case timeout
    }

    public enum Action: Equatable, Sendable {
        /// GET `uri`, the link's captive-portal API; answer with `.portalAPIFetched`.
        case fetchPortalAPI(uri: String, generation: UInt64)
        /// The fetch under way is no longer wanted.
        case cancelPortalAPIFetch
        /// Ask `gateway` from `source` (up to 3 tries 200 ms apart); answer with `.neighborChecked`.
        case checkNeighbor(gateway: IPAddress, source: String, number: UInt64)
        case cancelNeighborCheck(gateway: IPAddress, number: UInt64)
        /// `path`'s ask `generation` is answered by the check that went out at `checkedAt`.
        case neighborAnswered(ServiceCore.PathKey, generation: UInt64, NeighborAnswer, checkedAt: Instant)
        case log(String)
    }

    public init(id: LinkID, name: String) {
        self.id = id
        self.name = name
    }

    /// What targets routed over the link read of it.
    public var view: LinkView {
        var facts = services ?? LinkFacts()
        facts.portalAPI = portal.facts
        return LinkView(id: id, name: name, facts: facts, nat64Prefix: routerNat64Prefix)
    }

    /// What its captive-portal API last said (nil: nothing yet, or no API).
    public var portalAPIAnswer: CapportAnswer? { portal.answer }

    public func isFetching(generation: UInt64) -> Bool { portal.isUnderway(generation: generation) }

    public var nextWakeup: Instant? { portal.nextWakeup }

    /// Takes `event` at `now`: the link's actions, and whether its view changed.
    public mutating func handle(_ event: Event, now: Instant) -> (viewChanged: Bool, actions: [Action]) {
        let before = view
        var followed: [CapportFollower.Action] = []
        var neighborActions: [Action] = []
        switch event {
        case .named(let new, let facts, let uri, let prefix):
            name = new
            services = facts.map(Self.own)
            routerPortalAPI = uri
            routerNat64Prefix = prefix
            followed = announce(now: now)
        case .servicesSaid(let facts):
            services = facts.map(Self.own)
            followed = announce(now: now)
        case .routerAnnounced(let uri):
            routerPortalAPI = uri
            followed = announce(now: now)
        case .routerAdvertised(let prefix):
            routerNat64Prefix = prefix
        case .portalAPIFetched(let generation, let result):
            followed = portal.fetched(generation: generation, result, now: now).actions
        case .neighborAsked(let path, let gateway, let source, let generation, let routine):
            neighborActions = neighbors.ask(
                path, gateway: gateway, source: source, generation: generation, routine: routine, now: now
            )
            .map(action)
        case .neighborChecked(let gateway, let number, let answer):
            neighborActions = neighbors.answered(gateway: gateway, number: number, answer).map(action)
            if !neighborActions.isEmpty, answer != .reachable {
                neighborActions.insert(
                    .log("\(name): neighbour check of gateway \(gateway): \(answer.rawValue)"), at: 0)
            }
        case .neighborWithdrawn(let path):
            neighborActions = neighbors.withdraw(path).map(action)
        case .targetGone(let target):
            neighborActions = neighbors.withdraw(target: target).map(action)
        case .timeout:
            followed = portal.handleTimeout(now: now)
        }
        return (view != before, followed.map(action) + neighborActions)
    }

    /// The link is gone: the fetch and the checks under way with it.
    public mutating func end() -> [Action] {
        portal.stop().map(action) + neighbors.end().map(action)
    }

    /// The services' word without a portal API's answer (the link's own follower says that).
    private static func own(_ facts: LinkFacts) -> LinkFacts {
        var own = facts
        own.portalAPI = nil
        return own
    }

    /// A router's word goes before DHCP's (it is the fresher, and IPv6's own).
    private mutating func announce(now: Instant) -> [CapportFollower.Action] {
        portal.announced(routerPortalAPI ?? services?.dhcpPortalAPI, now: now)
    }

    private func action(_ followed: CapportFollower.Action) -> Action {
        switch followed {
        case .fetch(let uri, let generation): .fetchPortalAPI(uri: uri, generation: generation)
        case .cancel: .cancelPortalAPIFetch
        case .log(let line): .log("\(name): \(line)")
        }
    }

    private func action(_ shared: LinkNeighbors.Action) -> Action {
        switch shared {
        case .check(let gateway, let source, let number):
            .checkNeighbor(gateway: gateway, source: source, number: number)
        case .cancel(let gateway, let number): .cancelNeighborCheck(gateway: gateway, number: number)
        case .answer(let path, let generation, let answer, let checkedAt):
            .neighborAnswered(path, generation: generation, answer, checkedAt: checkedAt)
        }
    }
}
