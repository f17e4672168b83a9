import NetAddress
import Timekeeping

/// What each interface's routers announce (RFC 8781's NAT64 prefix, RFC 8910's captive-portal API) and which
/// advertisements count (INTERFACE.md, "Which advertisements count"). Pure: the kernel's table is read, never kept.
///
/// A router of an interface is the gateway of an IPv6 default route on it (each next hop of a multipath one), or,
/// for a route through the router's global address, the sender whose link-layer address is that gateway's. A
/// manager installs the default route only after reading the advertisement that implies it, so an advertisement
/// from a sender that is not yet a router is held for `holdFor` and counts once a default route through it
/// appears. A router's announcements end with their lifetimes, or once its default route has been gone for
/// `goneFor`: a route deleted and added again (NetworkManager changing a router's preference) changes nothing.
struct RouterAnnouncements {
    static let holdFor = Duration.seconds(10)
    static let goneFor = Duration.seconds(2)
    /// Senders held per interface at once: a host spraying advertisements from many addresses displaces its own.
    static let heldPerInterface = 4
    /// Options held per sender: its latest (a router sends its options once per advertisement, or spread over a few).
    static let heldOptionsPerSender = 8

    struct Prefix: Equatable {
        var prefix: Nat64Prefix
        var until: Instant
        var router: IPAddress
    }

    struct Portal: Equatable {
        var uri: String
        var router: IPAddress
    }

    /// What a sender that was not a router of its interface when it advertised has said in the last `holdFor`.
    private struct Held {
        var source: IPAddress
        var card: [UInt8]?
        /// Each option with when it came (a prefix's lifetime runs from there), oldest first.
        var options: [(option: RouterOption, receivedAt: Instant)]
        var malformed: [String]
        /// When the sender last advertised: it is held until `holdFor` after.
        var receivedAt: Instant
    }

    struct Changes: Equatable {
        var prefixes = false
        var portals = false
        /// Why advertisements or options were not taken, for the log.
        var ignored: [String] = []

        mutating func formUnion(_ other: Changes) {
            prefixes = prefixes || other.prefixes
            portals = portals || other.portals
            ignored += other.ignored
        }
    }

    private(set) var prefixes: [Int32: Prefix] = [:]
    private(set) var portals: [Int32: Portal] = [:]
    private var held: [Int32: [Held]] = [:]
    /// Routers with announcements whose default route went away, and since when.
    private var gone: [Int32: [IPAddress: Instant]] = [:]

    /// The kernel's neighbour table: the link-layer address of an address on an interface (nil: none known).
    let linkLayerAddress: (IPAddress, Int32) -> [UInt8]?

    init(linkLayerAddress: @escaping (IPAddress, Int32) -> [UInt8]?) {
        self.linkLayerAddress = linkLayerAddress
    }

    /// When `timeout` is next due: a prefix's lifetime, a held advertisement's end, a router gone long enough.
    var nextDeadline: Instant? {
        var earliest = prefixes.values.lazy.map(\.until).min()
        func consider(_ instant: Instant) { if earliest.map({ instant < $0 }) ?? true { earliest = instant } }
        for list in held.values { for advertisement in list { consider(advertisement.receivedAt &+ Self.holdFor) } }
        for routers in gone.values { for since in routers.values { consider(since &+ Self.goneFor) } }
        return earliest
    }

    // MARK: Events

    /// An advertisement's options from `source` on `index` (which the table knows).
    mutating func advertised(
        on index: Int32, _ bytes: [UInt8], from source: IPAddress, table: LinkTable, now: Instant
    ) -> Changes {
        let (options, malformed) = RouterOption.parse(bytes)
        let card = options.lazy.compactMap { if case .sourceLinkLayer(let card) = $0 { card } else { nil } }.first
        if let router = router(of: index, advertisingFrom: source, card: card, table: table) {
            return take(
                options.map { ($0, now) }, malformed: malformed, on: index, from: router, table: table, now: now)
        }
        var list = held[index] ?? []
        var sender = Held(source: source, card: card, options: [], malformed: [], receivedAt: now)
        if let earlier = list.firstIndex(where: { $0.source.bytes == source.bytes }) {
            sender = list.remove(at: earlier)
            sender.card = card ?? sender.card
            sender.receivedAt = now
        }
        sender.options = Array((sender.options + options.map { ($0, now) }).suffix(Self.heldOptionsPerSender))
        sender.malformed = Array((sender.malformed + malformed).suffix(Self.heldOptionsPerSender))
        list.append(sender)
        var changes = Changes()
        while list.count > Self.heldPerInterface {
            changes.ignored.append(notARouter(list.removeFirst().source, on: index, table: table))
        }
        held[index] = list
        return changes
    }

    /// The IPv6 default routes changed (a route added or deleted, a dump ended): held advertisements whose sender
    /// is now a router count, a router whose route is back is no longer gone, one whose route went away is.
    mutating func routesChanged(table: LinkTable, now: Instant) -> Changes {
        var changes = Changes()
        for index in held.keys.sorted() {
            var kept: [Held] = []
            for advertisement in held[index] ?? [] {
                if let router = router(
                    of: index, advertisingFrom: advertisement.source, card: advertisement.card, table: table)
                {
                    changes.formUnion(
                        take(
                            advertisement.options, malformed: advertisement.malformed, on: index, from: router,
                            table: table, now: now))
                } else {
                    kept.append(advertisement)
                }
            }
            held[index] = kept.isEmpty ? nil : kept
        }
        for index in Set(prefixes.keys).union(portals.keys).sorted() {
            let routers = Set(Self.ipv6Gateways(on: index, table: table).map(\.bytes))
            for router in [prefixes[index]?.router, portals[index]?.router].compactMap({ $0 }) {
                if routers.contains(router.bytes) {
                    gone[index]?[router] = nil
                } else if gone[index]?[router] == nil {
                    gone[index, default: [:]][router] = now
                }
            }
            if gone[index]?.isEmpty == true { gone[index] = nil }
        }
        return changes
    }

    /// Lifetimes ended, held advertisements no route came for, routers gone for `goneFor`.
    mutating func timeout(table: LinkTable, now: Instant) -> Changes {
        var changes = Changes()
        for (index, announced) in prefixes where announced.until <= now {
            prefixes[index] = nil
            changes.prefixes = true
        }
        for index in held.keys.sorted() {
            let list = held[index] ?? []
            for advertisement in list where advertisement.receivedAt &+ Self.holdFor <= now {
                changes.ignored.append(notARouter(advertisement.source, on: index, table: table))
            }
            let kept = list.filter { $0.receivedAt &+ Self.holdFor > now }
            held[index] = kept.isEmpty ? nil : kept
        }
        for index in gone.keys.sorted() {
            for (router, since) in gone[index] ?? [:] where since &+ Self.goneFor <= now {
                gone[index]?[router] = nil
                changes.formUnion(forget(router, on: index))
            }
            if gone[index]?.isEmpty == true { gone[index] = nil }
        }
        return changes
    }

    /// The link is gone: everything about it ends.
    mutating func linkRemoved(_ index: Int32) -> Changes {
        held[index] = nil
        gone[index] = nil
        var changes = Changes()
        changes.prefixes = prefixes.removeValue(forKey: index) != nil
        changes.portals = portals.removeValue(forKey: index) != nil
        return changes
    }

    /// The link went down: its portal announcement ends (a prefix keeps its lifetime).
    mutating func linkDown(_ index: Int32) -> Changes {
        var changes = Changes()
        changes.portals = portals.removeValue(forKey: index) != nil
        return changes
    }

    // MARK: Rules

    /// The router an advertisement from `source` on `index` speaks for; nil: none (yet).
    /// `card`: the advertisement's Source Link-Layer Address option, when it came whole from a socket.
    func router(of index: Int32, advertisingFrom source: IPAddress, card: [UInt8]?, table: LinkTable) -> IPAddress? {
        let gateways = Self.ipv6Gateways(on: index, table: table)
        if let same = gateways.first(where: { $0.bytes == source.bytes }) { return same }
        // A card stands for the router only where a route names the router's global address: wherever a manager
        // installed the route, it names the link-local address the advertisement comes from.
        let global = gateways.filter { !Self.isLinkLocal($0) }
        guard !global.isEmpty, let card = card ?? linkLayerAddress(source, index), !card.isEmpty else { return nil }
        return global.first { linkLayerAddress($0, index) == card }
    }

    static func ipv6Gateways(on index: Int32, table: LinkTable) -> [IPAddress] {
        table.defaultRoutes.filter { Int32($0.family) == IPAddress.familyIPv6 && $0.outputInterface == index }
            .compactMap(\.gateway)
    }

    static func isLinkLocal(_ address: IPAddress) -> Bool {
        guard case .v6(let bytes, _) = address, bytes.count == 16 else { return false }
        return bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
    }

    // MARK: Internals

    /// A router's options: a PREF64 sets the prefix for its lifetime from when it came (0 withdraws the prefix it
    /// names, and no other); a captive-portal option replaces the announcement.
    private mutating func take(
        _ options: [(option: RouterOption, receivedAt: Instant)], malformed: [String], on index: Int32,
        from router: IPAddress, table: LinkTable, now: Instant
    ) -> Changes {
        let name = table.links[index]?.name ?? "\(index)"
        var changes = Changes()
        changes.ignored = malformed.map { "from a router on \(name): \($0)" }
        gone[index]?[router] = nil
        for (option, receivedAt) in options {
            switch option {
            case .pref64(let prefix, let lifetime) where lifetime == 0:
                guard prefixes[index]?.prefix == prefix else { continue }
                prefixes[index] = nil
                changes.prefixes = true
            case .pref64(let prefix, _) where !isPlausible(prefix, on: index, table: table):
                changes.ignored.append(
                    "from a router on \(name): NAT64 prefix \(prefix) refused (loopback, link-local, multicast, "
                        + "IPv4-mapped or on the link itself)")
            case .pref64(let prefix, let lifetime):
                let until = receivedAt &+ .seconds(lifetime)
                guard until > now else { continue }
                changes.prefixes = prefixes[index]?.prefix != prefix || changes.prefixes
                prefixes[index] = Prefix(prefix: prefix, until: until, router: router)
            case .captivePortal(let uri):
                changes.portals = portals[index]?.uri != uri || changes.portals
                portals[index] = Portal(uri: uri, router: router)
            case .sourceLinkLayer:
                continue
            }
        }
        return changes
    }

    private mutating func forget(_ router: IPAddress, on index: Int32) -> Changes {
        var changes = Changes()
        if prefixes[index]?.router == router {
            prefixes[index] = nil
            changes.prefixes = true
        }
        if portals[index]?.router == router {
            portals[index] = nil
            changes.portals = true
        }
        return changes
    }

    /// A NAT64 prefix a network can have: not loopback, link-local, multicast, unspecified or IPv4-mapped, and not
    /// inside a prefix of the interface's own addresses (that would send IPv4 to the link itself).
    private func isPlausible(_ prefix: Nat64Prefix, on index: Int32, table: LinkTable) -> Bool {
        guard prefix.isGlobalUnicast else { return false }
        return !table.addresses(on: index, family: IPAddress.familyIPv6).contains { address in
            Nat64Prefix.covers(network: address.address, length: address.prefixLength, prefix: prefix)
        }
    }

    private func notARouter(_ source: IPAddress, on index: Int32, table: LinkTable) -> String {
        "options on \(table.links[index]?.name ?? "\(index)") from \(source), which is not a router of that "
            + "interface (no IPv6 default route through it within \(Self.holdFor.seconds) s)"
    }
}
