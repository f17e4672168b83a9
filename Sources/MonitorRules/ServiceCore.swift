import Timekeeping

/// The service's own work above its targets, without I/O: the networks' word on their captive portals
/// (routers' and DHCP's announcements merged, the follower that asks the APIs), the link facts every target
/// reads, and the machine's sleeps — announced by logind, or found as a jump of CLOCK_BOOTTIME over
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

    public enum Event: Sendable {
        /// What routers announce now (RFC 8910 option 37), by interface.
        case routersAnnounced([String: String])
        /// ModemManager and NetworkManager are followed from now on; `ready`: their first view is complete already.
        case servicesFollowed(ready: Bool)
        /// Their first view is complete.
        case servicesReady
        /// What ModemManager and NetworkManager say now, DHCP's announcements (option 114) among it.
        case servicesSaid(LinkFactsTable)
        /// Fetch `generation` of `interface`'s captive-portal API ended so.
        case portalAPIFetched(interface: String, generation: UInt64, Result<CapportAnswer, StrictJSON.Malformed>)
        /// logind: the machine is about to sleep (true), or woke (false).
        case sleepAnnounced(Bool)
        /// A target is about to handle a wake-up: a sleep nobody announced is found before any probe times out
        /// across it.
        case targetWakes
        /// Housekeeping, every `tick` (late by up to a tick: it rides on other wake-ups).
        case tick
        /// The follower's wake-up came.
        case timeout
    }

    public enum Action: Equatable, Sendable {
        /// GET `uri`, `interface`'s captive-portal API; answer with `.portalAPIFetched`.
        case fetchPortalAPI(interface: String, uri: String, generation: UInt64)
        /// The fetch under way for `interface` is no longer wanted.
        case cancelPortalAPIFetch(interface: String)
        case log(String)
        /// Every target takes these link facts (the services' with the APIs' answers in).
        case linkFacts(LinkFactsTable)
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

    private var follower = CapportFollower()
    private var routerAnnouncements: [String: String] = [:]
    private var services = LinkFactsTable()
    public private(set) var asleep = false
    /// CLOCK_BOOTTIME's lead over CLOCK_MONOTONIC when last read (nil: not yet).
    private var sleptAsLastRead: Duration?
    /// Until when the first verdicts wait for the services (nil: they do not).
    private var firstVerdictsHeldUntil: Instant?

    public init() {}

    /// The link facts every target reads: the services' with the APIs' answers in.
    public var linkFacts: LinkFactsTable { services.with(portalAPIs: follower.facts) }

    /// What `interface`'s API last said (nil: nothing yet, or no API there), with no table built.
    public func portalAPIAnswer(on interface: String) -> CapportAnswer? { follower.answer(on: interface) }

    /// Whether fetch `generation` is the one under way for `interface` (its answer will be taken).
    public func isFetching(interface: String, generation: UInt64) -> Bool {
        follower.isUnderway(interface: interface, generation: generation)
    }

    /// The earliest moment the core has work of its own (the ticks aside).
    public var nextWakeup: Instant? {
        switch (follower.nextWakeup, firstVerdictsHeldUntil) {
        case (let a?, let b?): min(a, b)
        case (let a, let b): a ?? b
        }
    }

    /// Takes `event` at `now`, with CLOCK_BOOTTIME's lead over CLOCK_MONOTONIC read as `slept`.
    public mutating func handle(_ event: Event, now: Instant, slept: Duration) -> [Action] {
        var actions: [Action] = []
        // The first event's reading is the base: a sleep is a jump from there.
        if sleptAsLastRead == nil { sleptAsLastRead = slept }
        switch event {
        case .routersAnnounced(let uris):
            routerAnnouncements = uris
            if announce(now: now, into: &actions) { actions.append(.linkFacts(linkFacts)) }
        case .servicesFollowed(let ready):
            guard !ready else { break }
            firstVerdictsHeldUntil = now + Self.servicesWait
            actions.append(.holdFirstVerdicts(true))
        case .servicesReady:
            releaseFirstVerdicts(into: &actions)
        case .servicesSaid(let table):
            services = table
            _ = announce(now: now, into: &actions)
            actions.append(.linkFacts(linkFacts))
        case .portalAPIFetched(let interface, let generation, let result):
            let (changed, followed) = follower.fetched(interface: interface, generation: generation, result, now: now)
            actions += followed.map(Self.action)
            if changed { actions.append(.linkFacts(linkFacts)) }
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
            actions += follower.handleTimeout(now: now).map(Self.action)
        }
        return actions
    }

    /// Hands the follower every announcement; true when what it knows changed.
    private mutating func announce(now: Instant, into actions: inout [Action]) -> Bool {
        // A router's word goes before DHCP's on the same interface (it is the fresher, and IPv6's own).
        let merged = services.dhcpPortalAPIs.merging(routerAnnouncements) { _, router in router }
        let before = follower.facts
        actions += follower.announced(merged, now: now).map(Self.action)
        return follower.facts != before
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

    private static func action(_ followed: CapportFollower.Action) -> Action {
        switch followed {
        case .fetch(let interface, let uri, let generation):
            .fetchPortalAPI(interface: interface, uri: uri, generation: generation)
        case .cancel(let interface): .cancelPortalAPIFetch(interface: interface)
        case .log(let line): .log(line)
        }
    }
}
