import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// The service's own work above its targets, without I/O: its links (a `LinkCore` each, keyed by `LinkID`: what
/// the services say of it, what its routers and DHCP announce, its captive-portal API), which link each target's
/// path is routed over (route verdicts come through here, so each target hears exactly of its own links), and
/// the machine's sleeps — announced by logind, or found as a jump of CLOCK_BOOTTIME over
/// CLOCK_MONOTONIC nobody announced — with the histories' ticks, and the first verdicts' wait for the services.
/// Events in, actions out (what every target is to hear, what to fetch, what to write), and the next wake-up
/// over the whole set.
public struct ServiceCore: Sendable {
    /// Histories are written, and the clocks compared, this often (housekeeping: never punctual).
    public static let tick = Duration.seconds(10)
    /// A jump of BOOTTIME over MONOTONIC longer than this is a sleep (clock adjustments move neither).
    public static let sleepJump = Duration.seconds(1)
    /// How long the first verdicts wait for ModemManager's and NetworkManager's first answers.
    public static let servicesWait = Duration.seconds(1)

    /// A target's path, as the service routes its verdicts and link views.
    public struct PathKey: Hashable, Comparable, Sendable {
        public var target: Int
        public var family: IPFamily

        public init(target: Int, family: IPFamily) {
            self.target = target
            self.family = family
        }

        public static func < (a: PathKey, b: PathKey) -> Bool {
            (a.target, TargetCore.index(of: a.family)) < (b.target, TargetCore.index(of: b.family))
        }
    }

    public enum Event: Sendable {
        /// The kernel's links now, by index (after each change the route core saw, its table whole).
        case kernelLinks([Int32: String])
        /// What routers announce now (RFC 8910 option 37), by interface.
        case routersAnnounced([String: String])
        /// The NAT64 prefixes routers advertise now (RFC 8781), by interface index.
        case routersAdvertised(nat64Prefixes: [Int32: Nat64Prefix])
        /// ModemManager and NetworkManager are followed from now on; `ready`: their first view is complete already.
        case servicesFollowed(ready: Bool)
        /// Their first view is complete.
        case servicesReady
        /// What ModemManager and NetworkManager say now, DHCP's announcements (option 114) among it.
        case servicesSaid(LinkFactsTable)
        /// Fetch `generation` of `link`'s captive-portal API ended so.
        case portalAPIFetched(link: LinkID, generation: UInt64, Result<CapportAnswer, StrictJSON.Malformed>)
        /// The route core's verdict for target `target`'s path of `family`.
        case routed(target: Int, family: IPFamily, ReachabilityVerdict)
        /// `path` asks its next hop `gateway` on interface `interfaceIndex` (ask `generation`; `routine`: the healthy
        /// recheck): one check per (link, gateway) serves every path that asks (`LinkNeighbors`).
        case neighborAsked(
            PathKey, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64, routine: Bool)
        /// Check `number` of `link`'s `gateway` answered so.
        case neighborChecked(link: LinkID, gateway: IPAddress, number: UInt64, NeighborAnswer)
        /// Target `target` probes with this Timeout now (it bounds the portal APIs' fetches of its links).
        case targetTimeout(target: Int, Duration)
        /// Target `target` is gone.
        case targetGone(Int)
        /// logind: the machine is about to sleep (true), or woke (false).
        case sleepAnnounced(Bool)
        /// A target is about to handle a wake-up: a sleep nobody announced is found before any probe times out
        /// across it.
        case targetWakes
        /// Housekeeping, every `tick` (late by up to a tick: it rides on other wake-ups).
        case tick
        /// The core's wake-up came.
        case timeout
    }

    public enum Action: Equatable, Sendable {
        /// GET `uri`, `link`'s (`interface`'s) captive-portal API, ended by `limit`; answer with `.portalAPIFetched`.
        case fetchPortalAPI(link: LinkID, interface: String, uri: String, generation: UInt64, limit: Duration)
        /// The fetch under way for `link` is no longer wanted.
        case cancelPortalAPIFetch(link: LinkID)
        case log(String)
        /// Ask `gateway` on `link` (interface `interfaceIndex`) from `source`, up to 3 tries 200 ms apart; answer with
        /// `.neighborChecked`.
        case checkNeighbor(link: LinkID, interfaceIndex: Int32, gateway: IPAddress, source: String, number: UInt64)
        case cancelNeighborCheck(link: LinkID, gateway: IPAddress, number: UInt64)
        /// `path`'s ask `generation` of its next hop is answered by the check that went out at `checkedAt`.
        case neighborAnswered(PathKey, generation: UInt64, NeighborAnswer, checkedAt: Instant)
        /// Target `path.target`'s path of `path.family` takes this verdict, and the view of the link it is routed over.
        case route(PathKey, ReachabilityVerdict, link: LinkView?)
        /// What that path reads of link `id`, the one it is routed over, changed (nil: the link is gone).
        case link(PathKey, LinkID, LinkView?)
        /// The machine goes to sleep (true) or woke (false): every history suspends or resumes, every target's
        /// engines too.
        case sleep(Bool)
        /// The machine slept so long unannounced: every history takes the time out, every target starts afresh.
        case slept(Duration)
        /// What changed of every history goes to disk (before a sleep: everything).
        case writeHistories
        /// Every target holds back its first verdict (true) until the services' first view, or lets it go.
        case holdFirstVerdicts(Bool)
    }

    /// Every link the kernel has, by `LinkID`; `linkIDs` finds one by its index now.
    public private(set) var links: [LinkID: LinkCore] = [:]
    private var linkIDs: [Int32: LinkID] = [:]
    private var nextGeneration: UInt32 = 0
    /// The link each target's path is routed over (its last verdict that named one).
    public private(set) var routes: [PathKey: LinkID] = [:]
    /// The link each path last asked a next hop on (its answer may still be coming).
    private var neighborAsks: [PathKey: LinkID] = [:]
    /// Links the route core has not said yet that a path asked a next hop on (generation 0, no name): their checks
    /// are shared all the same, and they go when none runs.
    private var unsaidLinks: [Int32: LinkCore] = [:]
    /// Each target's Timeout: a link's fetch ends within max(5 s, the longest of its targets').
    private var timeouts: [Int: Duration] = [:]
    private var routerAnnouncements: [String: String] = [:]
    private var routerPrefixes: [Int32: Nat64Prefix] = [:]
    private var services = LinkFactsTable()
    public private(set) var asleep = false
    /// CLOCK_BOOTTIME's lead over CLOCK_MONOTONIC when last read (nil: not yet).
    private var sleptAsLastRead: Duration?
    /// Until when the first verdicts wait for the services (nil: they do not).
    private var firstVerdictsHeldUntil: Instant?

    public init() {}

    /// The link the kernel calls `interface` now.
    public func link(named interface: String) -> LinkCore? {
        interface.isEmpty ? nil : links.values.first { $0.name == interface }
    }

    /// What `interface`'s API last said (nil: nothing yet, or no API there).
    public func portalAPIAnswer(on interface: String) -> CapportAnswer? { link(named: interface)?.portalAPIAnswer }

    /// Whether fetch `generation` is the one under way for `link` (its answer will be taken).
    public func isFetching(link: LinkID, generation: UInt64) -> Bool {
        links[link]?.isFetching(generation: generation) ?? false
    }

    /// The earliest moment the core has work of its own (the ticks aside): its links' and the first verdicts' wait.
    public var nextWakeup: Instant? {
        var earliest = firstVerdictsHeldUntil
        for link in links.values {
            if let wake = link.nextWakeup, earliest.map({ wake < $0 }) ?? true { earliest = wake }
        }
        return earliest
    }

    /// Takes `event` at `now`, with CLOCK_BOOTTIME's lead over CLOCK_MONOTONIC read as `slept`.
    public mutating func handle(_ event: Event, now: Instant, slept: Duration) -> [Action] {
        var actions: [Action] = []
        // The first event's reading is the base: a sleep is a jump from there.
        if sleptAsLastRead == nil { sleptAsLastRead = slept }
        switch event {
        case .kernelLinks(let names):
            kernelLinks(names, now: now, into: &actions)
        case .routersAnnounced(let uris):
            routerAnnouncements = uris
            for id in links.keys.sorted() {
                let uri = links[id].flatMap { uris[$0.name] }
                take(id, .routerAnnounced(portalAPI: uri), now: now, into: &actions)
            }
        case .routersAdvertised(let prefixes):
            routerPrefixes = prefixes
            for id in links.keys.sorted() {
                take(id, .routerAdvertised(nat64Prefix: prefixes[id.index]), now: now, into: &actions)
            }
        case .servicesFollowed(let ready):
            guard !ready else { break }
            firstVerdictsHeldUntil = now + Self.servicesWait
            actions.append(.holdFirstVerdicts(true))
        case .servicesReady:
            releaseFirstVerdicts(into: &actions)
        case .servicesSaid(let table):
            services = table
            for id in links.keys.sorted() {
                let facts = links[id].flatMap { table[$0.name] }
                take(id, .servicesSaid(facts), now: now, into: &actions)
            }
        case .portalAPIFetched(let link, let generation, let result):
            take(link, .portalAPIFetched(generation: generation, result), now: now, into: &actions)
        case .routed(let target, let family, let verdict):
            let path = PathKey(target: target, family: family)
            if let id = linkID(of: verdict) {
                routes[path] = id
            } else if !verdict.interface.isEmpty || verdict.interfaceIndex != 0 {
                routes[path] = nil
            }
            actions.append(.route(path, verdict, link: routes[path].flatMap { links[$0]?.view }))
        case .neighborAsked(let path, let gateway, let interfaceIndex, let source, let generation, let routine):
            let id = linkIDs[interfaceIndex] ?? LinkID(index: interfaceIndex, generation: 0)
            if let previous = neighborAsks[path], previous != id {
                take(previous, .neighborWithdrawn(path), now: now, into: &actions)
            }
            neighborAsks[path] = id
            let ask = LinkCore.Event.neighborAsked(
                path, gateway: gateway, source: source, generation: generation, routine: routine)
            take(id, ask, now: now, into: &actions)
        case .neighborChecked(let link, let gateway, let number, let answer):
            take(link, .neighborChecked(gateway: gateway, number: number, answer), now: now, into: &actions)
        case .targetTimeout(let target, let timeout):
            timeouts[target] = timeout
        case .targetGone(let target):
            timeouts[target] = nil
            routes = routes.filter { $0.key.target != target }
            for id in Set(neighborAsks.filter { $0.key.target == target }.values).sorted() {
                take(id, .targetGone(target), now: now, into: &actions)
            }
            neighborAsks = neighborAsks.filter { $0.key.target != target }
        case .sleepAnnounced(let value):
            guard value != asleep else { break }
            asleep = value
            actions.append(.sleep(value))
            // What the sleep closed is on disk before the machine sleeps; the time asleep is never a jump.
            if value { actions.append(.writeHistories) } else { sleptAsLastRead = slept }
        case .targetWakes:
            noticeSleep(slept, into: &actions)
        case .tick:
            noticeSleep(slept, into: &actions)
            actions.append(.writeHistories)
        case .timeout:
            if let until = firstVerdictsHeldUntil, until <= now { releaseFirstVerdicts(into: &actions) }
            for (id, link) in links.sorted(by: { $0.key < $1.key }) {
                guard let wake = link.nextWakeup, wake <= now else { continue }
                take(id, .timeout, now: now, into: &actions)
            }
        }
        return actions
    }

    /// The link a verdict names: by its index, else (a verdict from no kernel table) by its name.
    private func linkID(of verdict: ReachabilityVerdict) -> LinkID? {
        if verdict.interfaceIndex != 0 { return linkIDs[verdict.interfaceIndex] }
        return link(named: verdict.interface)?.id
    }

    /// The kernel's links now: those gone end (their targets hear so), new ones begin with what is said of their
    /// names, and a renamed one takes what is said of its new name.
    private mutating func kernelLinks(_ names: [Int32: String], now: Instant, into actions: inout [Action]) {
        for (index, id) in linkIDs.sorted(by: { $0.key < $1.key }) where names[index] == nil {
            linkIDs[index] = nil
            guard var link = links.removeValue(forKey: id) else { continue }
            actions += link.end().map { Self.action($0, of: link) }
            for path in routes.keys.sorted() where routes[path] == id {
                routes[path] = nil
                actions.append(.link(path, id, nil))
            }
        }
        for (index, name) in names.sorted(by: { $0.key < $1.key }) {
            let id: LinkID
            if let known = linkIDs[index] {
                guard links[known]?.name != name else { continue }
                id = known
            } else {
                nextGeneration &+= 1
                id = LinkID(index: index, generation: nextGeneration)
                linkIDs[index] = id
                links[id] = LinkCore(id: id, name: name)
            }
            let named = LinkCore.Event.named(
                name, services: services[name], routerPortalAPI: routerAnnouncements[name],
                nat64Prefix: routerPrefixes[index])
            take(id, named, now: now, into: &actions)
        }
    }

    /// Hands `event` to link `id`; its actions become the service's, and a changed view goes to every path
    /// routed over it, and only to those.
    private mutating func take(_ id: LinkID, _ event: LinkCore.Event, now: Instant, into actions: inout [Action]) {
        guard id.generation != 0 else { return takeUnsaid(id, event, now: now, into: &actions) }
        guard var link = links[id] else { return }
        let (viewChanged, linkActions) = link.handle(event, now: now)
        links[id] = link
        actions += linkActions.map { Self.action($0, of: link, limit: fetchLimit(of: id)) }
        guard viewChanged else { return }
        let view = link.view
        for path in routes.keys.sorted() where routes[path] == id { actions.append(.link(path, id, view)) }
    }

    /// A link not said yet keeps only its neighbour checks, and only while one runs.
    private mutating func takeUnsaid(
        _ id: LinkID, _ event: LinkCore.Event, now: Instant, into actions: inout [Action]
    ) {
        var link = unsaidLinks[id.index] ?? LinkCore(id: id, name: "interface \(id.index)")
        actions += link.handle(event, now: now).actions.map { Self.action($0, of: link) }
        unsaidLinks[id.index] = link.neighbors.isIdle ? nil : link
    }

    /// max(5 s, the longest Timeout of the targets routed over `link`; of every target while none is).
    private func fetchLimit(of link: LinkID) -> Duration {
        let routed = routes.filter { $0.value == link }.compactMap { timeouts[$0.key.target] }
        let longest = (routed.isEmpty ? Array(timeouts.values) : routed).max() ?? .zero
        return .milliseconds(PortalCheck.limitMilliseconds(timeout: UInt32(clamping: longest.milliseconds)))
    }

    private mutating func releaseFirstVerdicts(into actions: inout [Action]) {
        guard firstVerdictsHeldUntil != nil else { return }
        firstVerdictsHeldUntil = nil
        actions.append(.holdFirstVerdicts(false))
    }

    private mutating func noticeSleep(_ slept: Duration, into actions: inout [Action]) {
        let last = sleptAsLastRead ?? slept
        sleptAsLastRead = slept
        let jump = slept > last ? slept - last : .zero
        guard jump > Self.sleepJump, !asleep else { return }
        actions.append(.log("the machine slept for \(jump.seconds) s (CLOCK_BOOTTIME jumped)"))
        actions.append(.slept(jump))
    }

    private static func action(_ action: LinkCore.Action, of link: LinkCore, limit: Duration = .zero) -> Action {
        switch action {
        case .fetchPortalAPI(let uri, let generation):
            .fetchPortalAPI(link: link.id, interface: link.name, uri: uri, generation: generation, limit: limit)
        case .cancelPortalAPIFetch: .cancelPortalAPIFetch(link: link.id)
        case .checkNeighbor(let gateway, let source, let number):
            .checkNeighbor(
                link: link.id, interfaceIndex: link.id.index, gateway: gateway, source: source, number: number)
        case .cancelNeighborCheck(let gateway, let number):
            .cancelNeighborCheck(link: link.id, gateway: gateway, number: number)
        case .neighborAnswered(let path, let generation, let answer, let checkedAt):
            .neighborAnswered(path, generation: generation, answer, checkedAt: checkedAt)
        case .log(let line): .log(line)
        }
    }
}
