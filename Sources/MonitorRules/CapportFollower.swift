import Timekeeping

/// When one link's captive-portal API is asked, and what it last said (INTERFACE.md "Portal truth"), without
/// I/O; its `LinkCore` holds it. The announcement (a router's option 37, else DHCP option 114) comes in; fetches
/// go out, one at a time, each answered once; the clock drives the cadence: at once when announced or changed,
/// every 2 s while captive, else at the earlier of 300 s and `seconds-remaining` - 60 s. What cannot be fetched
/// or taken is logged (without the link's name: the link says it) and says nothing.
public struct CapportFollower: Sendable {
    public static let captiveRefresh = Duration.seconds(2)
    public static let refresh = Duration.seconds(300)
    /// After an answer not taken (or none): asked again this much later.
    public static let retry = Duration.seconds(30)
    /// Announcements are coalesced: a new or changed URI is fetched at most this often, however often a router
    /// (or someone claiming to be one) announces (40 a second cost 85 % of a core).
    public static let announcementSpacing = Duration.seconds(10)
    /// `seconds-remaining` is asked about this long before it runs out.
    public static let marginSeconds: UInt64 = 60
    /// RFC 8910: the URI that says there is no portal here.
    public static let unrestricted = "urn:ietf:params:capport:unrestricted"

    public enum Action: Equatable, Sendable {
        /// GET `uri`; answer with `fetched(generation:…)`.
        case fetch(uri: String, generation: UInt64)
        /// The fetch under way is no longer wanted.
        case cancel
        /// For the log.
        case log(String)
    }

    /// What the follower knows of the announced API.
    public struct Entry: Equatable, Sendable {
        public var uri: String
        /// The last answer taken; nil before the first, or after one not taken.
        public var answer: CapportAnswer?
        var running: UInt64?
        var nextAt: Instant?
        /// Its first fetch (the announcement's) is yet to start.
        var announcedFetchDue = false
    }

    public private(set) var entry: Entry?
    private var generation: UInt64 = 0
    /// When the last announcement fetch started (kept for `announcementSpacing`).
    private var announcementFetch: Instant?
    /// When the last announcement was logged, and how many since were not (issue 54 N20: a router changing its
    /// announcement with every advertisement made a line each).
    private var announcementLog: (at: Instant, unsaid: Int)?

    public init() {}

    /// The announced URI and what its API last said (nil: none announced).
    public var facts: PortalAPIFacts? {
        entry.map { PortalAPIFacts(uri: $0.uri, answer: $0.answer) }
    }

    /// What the API last said (nil: nothing yet, or no API).
    public var answer: CapportAnswer? { entry?.answer }

    /// Whether fetch `generation` is the one under way (its answer will be taken).
    public func isUnderway(generation: UInt64) -> Bool {
        entry?.running == generation
    }

    public var nextWakeup: Instant? {
        entry?.running == nil ? entry?.nextAt : nil
    }

    /// The URI announced now (nil: none any more).
    public mutating func announced(_ uri: String?, now: Instant) -> [Action] {
        guard uri != entry?.uri else { return due(now: now) }
        var actions: [Action] = []
        if let announcementFetch, now - announcementFetch >= Self.announcementSpacing { self.announcementFetch = nil }
        if entry?.running != nil { actions.append(.cancel) }
        entry = nil
        guard let uri else { return actions }
        var entry = Entry(uri: uri)
        if uri == Self.unrestricted {
            logAnnouncement("the network says it has no captive portal", now, &actions)
        } else if !uri.hasPrefix("https://") {
            logAnnouncement("captive-portal API \(uri) ignored: not an https URI", now, &actions)
        } else {
            logAnnouncement("the network announces its captive-portal API at \(uri)", now, &actions)
            entry.nextAt = announcementFetch.map { max(now, $0 &+ Self.announcementSpacing) } ?? now
            entry.announcedFetchDue = true
        }
        self.entry = entry
        return actions + due(now: now)
    }

    /// An announcement's line, at most one per `announcementSpacing`; the next one says how many were not logged.
    private mutating func logAnnouncement(_ line: String, _ now: Instant, _ actions: inout [Action]) {
        if let last = announcementLog, now - last.at < Self.announcementSpacing {
            announcementLog?.unsaid += 1
            return
        }
        let unsaid = announcementLog?.unsaid ?? 0
        announcementLog = (now, 0)
        actions.append(.log(line + (unsaid > 0 ? " (\(unsaid) earlier announcements not logged)" : "")))
    }

    /// Fetch `generation` ended: the API's answer, or why there is none to take.
    public mutating func fetched(
        generation: UInt64, _ result: Result<CapportAnswer, StrictJSON.Malformed>, now: Instant
    ) -> (changed: Bool, actions: [Action]) {
        guard var entry, entry.running == generation else { return (false, []) }
        let before = entry.answer
        entry.running = nil
        var actions: [Action] = []
        switch result {
        case .success(let answer):
            entry.answer = answer
            if answer.captive {
                entry.nextAt = now &+ Self.captiveRefresh
            } else {
                var wait = Self.refresh
                if let seconds = answer.secondsRemaining {
                    // Bounded before it is scaled: the API says how many seconds, up to 2^40.
                    let early = min(
                        seconds > Self.marginSeconds ? seconds - Self.marginSeconds : 0, Self.refresh.seconds)
                    wait = max(Self.captiveRefresh, min(wait, .seconds(early)))
                }
                entry.nextAt = now &+ wait
            }
            if before?.captive != answer.captive {
                actions.append(
                    .log(
                        "the captive-portal API says "
                            + (answer.captive ? "captive: sign in at \(answer.userPortalURL ?? "")" : "not captive")))
            }
        case .failure(let why):
            entry.answer = nil
            entry.nextAt = now &+ (before?.captive == true ? Self.captiveRefresh : Self.retry)
            actions.append(.log("captive-portal API \(entry.uri) ignored: \(why.text)"))
        }
        self.entry = entry
        return (before != entry.answer, actions)
    }

    public mutating func handleTimeout(now: Instant) -> [Action] {
        due(now: now)
    }

    /// The link is gone: the announcement with it, and the fetch under way (if any).
    public mutating func stop() -> [Action] {
        defer { entry = nil }
        return entry?.running != nil ? [.cancel] : []
    }

    private mutating func due(now: Instant) -> [Action] {
        guard var entry, entry.running == nil, let at = entry.nextAt, at <= now else { return [] }
        generation &+= 1
        entry.running = generation
        entry.nextAt = nil
        if entry.announcedFetchDue {
            entry.announcedFetchDue = false
            announcementFetch = now
        }
        self.entry = entry
        return [.fetch(uri: entry.uri, generation: generation)]
    }
}

/// One interface's captive-portal API as the targets see it.
public struct PortalAPIFacts: Equatable, Sendable {
    public var uri: String
    public var answer: CapportAnswer?

    public init(uri: String, answer: CapportAnswer? = nil) {
        self.uri = uri
        self.answer = answer
    }
}
