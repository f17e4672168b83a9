import Timekeeping

/// When each interface's captive-portal API is asked, and what it last said (INTERFACE.md "Portal
/// truth"), without I/O. The announcements (routers' option 37, else DHCP option 114) come in per
/// interface; fetches go out, one at a time per interface, each answered once; the clock drives the
/// cadence: at once when announced or changed, every 2 s while captive, else at the earlier of
/// 300 s and `seconds-remaining` - 60 s. What cannot be fetched or taken is logged and says nothing.
public struct CapportFollower: Sendable {
    public static let captiveRefresh = Duration.seconds(2)
    public static let refresh = Duration.seconds(300)
    /// After an answer not taken (or none): asked again this much later.
    public static let retry = Duration.seconds(30)
    /// Announcements are coalesced: a new or changed URI on an interface is fetched at most this often, however
    /// often a router (or someone claiming to be one) announces (40 a second cost 85 % of a core).
    public static let announcementSpacing = Duration.seconds(10)
    /// `seconds-remaining` is asked about this long before it runs out.
    public static let marginSeconds: UInt64 = 60
    /// RFC 8910: the URI that says there is no portal here.
    public static let unrestricted = "urn:ietf:params:capport:unrestricted"

    public enum Action: Equatable, Sendable {
        /// GET `uri` for `interface`; answer with `fetched(interface:generation:…)`.
        case fetch(interface: String, uri: String, generation: UInt64)
        /// The fetch under way for `interface` is no longer wanted.
        case cancel(interface: String)
        /// For the log.
        case log(String)
    }

    /// What the follower knows of one interface's API.
    public struct Entry: Equatable, Sendable {
        public var uri: String
        /// The last answer taken; nil before the first, or after one not taken.
        public var answer: CapportAnswer?
        var running: UInt64?
        var nextAt: Instant?
        /// Its first fetch (the announcement's) is yet to start.
        var announcedFetchDue = false
    }

    public private(set) var entries: [String: Entry] = [:]
    private var generation: UInt64 = 0
    /// When each interface's last announcement fetch started (kept for `announcementSpacing`, so at most one per
    /// interface with a recent fetch).
    private var announcementFetches: [String: Instant] = [:]
    /// When each interface's last announcement was logged, and how many since were not (issue 54 N20: a router
    /// changing its announcement with every advertisement made a line each).
    private var announcementLogs: [String: (at: Instant, unsaid: Int)] = [:]

    public init() {}

    /// Each interface's facts: the announced URI and what its API last said.
    public var facts: [String: PortalAPIFacts] {
        entries.mapValues { PortalAPIFacts(uri: $0.uri, answer: $0.answer) }
    }

    /// What `interface`'s API last said (nil: nothing yet, or no API there), with no table built.
    public func answer(on interface: String) -> CapportAnswer? {
        entries[interface]?.answer
    }

    /// Whether fetch `generation` is the one under way for `interface` (its answer will be taken).
    public func isUnderway(interface: String, generation: UInt64) -> Bool {
        entries[interface]?.running == generation
    }

    public var nextWakeup: Instant? {
        entries.values.compactMap { $0.running == nil ? $0.nextAt : nil }.min()
    }

    /// The URIs announced now, by interface (an interface left out has none any more).
    public mutating func announced(_ uris: [String: String], now: Instant) -> [Action] {
        var actions: [Action] = []
        announcementFetches = announcementFetches.filter { now - $0.value < Self.announcementSpacing }
        for (interface, entry) in entries.sorted(by: { $0.key < $1.key }) where uris[interface] != entry.uri {
            if entry.running != nil { actions.append(.cancel(interface: interface)) }
            entries[interface] = nil
        }
        for (interface, uri) in uris.sorted(by: { $0.key < $1.key }) where entries[interface] == nil {
            var entry = Entry(uri: uri)
            if uri == Self.unrestricted {
                logAnnouncement("\(interface): the network says it has no captive portal", interface, now, &actions)
            } else if !uri.hasPrefix("https://") {
                logAnnouncement(
                    "\(interface): captive-portal API \(uri) ignored: not an https URI", interface, now, &actions)
            } else {
                logAnnouncement(
                    "\(interface): the network announces its captive-portal API at \(uri)", interface, now, &actions)
                entry.nextAt = announcementFetches[interface].map { max(now, $0 &+ Self.announcementSpacing) } ?? now
                entry.announcedFetchDue = true
            }
            entries[interface] = entry
        }
        return actions + due(now: now)
    }

    /// An announcement's line, at most one per interface per `announcementSpacing`; the next one says how many were
    /// not logged.
    private mutating func logAnnouncement(
        _ line: String, _ interface: String, _ now: Instant, _ actions: inout [Action]
    ) {
        if let last = announcementLogs[interface], now - last.at < Self.announcementSpacing {
            announcementLogs[interface]?.unsaid += 1
            return
        }
        let unsaid = announcementLogs[interface]?.unsaid ?? 0
        announcementLogs[interface] = (now, 0)
        actions.append(.log(line + (unsaid > 0 ? " (\(unsaid) earlier announcements not logged)" : "")))
    }

    /// Fetch `generation` for `interface` ended: the API's answer, or why there is none to take.
    public mutating func fetched(
        interface: String, generation: UInt64, _ result: Result<CapportAnswer, StrictJSON.Malformed>,
        now: Instant
    ) -> (changed: Bool, actions: [Action]) {
        guard var entry = entries[interface], entry.running == generation else { return (false, []) }
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
                        "\(interface): the captive-portal API says "
                            + (answer.captive ? "captive: sign in at \(answer.userPortalURL ?? "")" : "not captive")))
            }
        case .failure(let why):
            entry.answer = nil
            entry.nextAt = now &+ (before?.captive == true ? Self.captiveRefresh : Self.retry)
            actions.append(.log("\(interface): captive-portal API \(entry.uri) ignored: \(why.text)"))
        }
        entries[interface] = entry
        return (before != entry.answer, actions)
    }

    public mutating func handleTimeout(now: Instant) -> [Action] {
        due(now: now)
    }

    private mutating func due(now: Instant) -> [Action] {
        var actions: [Action] = []
        for (interface, entry) in entries.sorted(by: { $0.key < $1.key }) {
            guard entry.running == nil, let at = entry.nextAt, at <= now else { continue }
            generation &+= 1
            entries[interface]?.running = generation
            entries[interface]?.nextAt = nil
            if entry.announcedFetchDue {
                entries[interface]?.announcedFetchDue = false
                announcementFetches[interface] = now
            }
            actions.append(.fetch(interface: interface, uri: entry.uri, generation: generation))
        }
        return actions
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
