import MonitorRules
import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// A target whose Host has an address in each family, run through the daemon's driver on a
/// virtual clock, while each family's path is blackholed, restored, loses its route or gets it
/// back on a schedule (INTERFACE.md "Every path"). It checks, on every published state, that the
/// headline is the best family's; that a family failing while another is full never moves
/// Connectivity or Status; that the families' first probes go out together; and that while every
/// family is full the others than the headline's are probed within the cost rule.
public final class DualStackRun: TargetWorld {
    public enum FaultKind: Equatable, Sendable {
        case blackhole, restore, routeLost, routeBack
        /// The router advertises the NAT64 prefix on the IPv6 link for this long (0 withdraws it).
        case nat64Prefix(lifetimeSeconds: UInt64)
    }

    public struct Fault: Sendable {
        public var at: Instant
        public var family: IPFamily
        public var kind: FaultKind

        public init(atMilliseconds at: UInt64, _ family: IPFamily, _ kind: FaultKind) {
            self.at = .origin + .milliseconds(at)
            self.family = family
            self.kind = kind
        }
    }

    /// What the run measured.
    public struct Figures: Sendable {
        /// When Connectivity was first `full`; nil: never.
        public var firstFull: Instant?
        /// Changes of Connectivity and of Status after the first `full`.
        public var headlineTransitions = 0
        public var statusChanges = 0
        public var probes: [IPFamily: Int] = [.v4: 0, .v6: 0]
        /// Each family's probes sent while every family was full, and the time that lasted.
        public var probesWhileAllFull: [IPFamily: Int] = [.v4: 0, .v6: 0]
        public var allFull = Duration.zero
        public var violations: [String] = []
    }

    public static let addresses: [IPFamily: IPAddress] = [
        .v4: .v4([198, 18, 2, 2]),
        .v6: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]),
    ]

    private enum Event {
        case reply(IPFamily, sequence: UInt16, token: UInt64)
        case fault(Fault)
        /// The advertised prefix's lifetime ends (if it was not advertised again since).
        case prefixExpires(at: Instant)
    }

    /// The prefix the router advertises (RFC 8781 style), through which IPv4 is reached when it has no route.
    public static let prefix = Nat64Prefix(
        prefix: .v6(AddressBytes([0x20, 0x01, 0x0d, 0xb8, 0, 0x64] + [UInt8](repeating: 0, count: 10))), length: 96)

    public private(set) var now = Instant.origin
    public func interfaceIndex(named name: String) -> UInt32? { nil }
    public var routedFamilies: IPFamilies? { IPFamilies.all.filter { routed[$0] == true } }
    public private(set) var figures = Figures()
    public private(set) var state = MonitorState()
    private let order: [IPFamily]
    private let end: Instant
    private var random: SeededRandom
    private var queue = EventQueue<Event>()
    private var blackholed: [IPFamily: Bool] = [.v4: false, .v6: false]
    private var routed: [IPFamily: Bool] = [.v4: true, .v6: true]
    private var aimed: [IPFamily: IPAddress] = [:]
    /// Where each path's route watch points (the IPv4 path's at a synthesized address through NAT64).
    private var watched: [IPFamily: IPAddress] = [:]
    /// Until when the NAT64 prefix is advertised; nil: it is not.
    private var prefixUntil: Instant?
    private var wake: Instant?
    private var firstSends: [IPFamily: Instant] = [:]
    private var lastPublished: (Status, Connectivity)?
    private var allFullSince: Instant?
    private let settings: ProbeSettings
    private lazy var driver = TargetDriver(
        core: TargetCore(
            host: "dual.test", family: .any, probeSettings: settings,
            seed: random.next()),
        world: self)

    /// `order`: the families as the resolver lists them.
    public init(
        settings: ProbeSettings, seed: UInt64, order: [IPFamily] = [.v6, .v4], faults: [Fault] = [],
        durationMilliseconds: UInt64
    ) {
        self.settings = settings
        self.order = order
        end = .origin + .milliseconds(durationMilliseconds)
        random = SeededRandom(seed: seed)
        for fault in faults { queue.add(.fault(fault), at: fault.at) }
    }

    /// Runs to the end; returns the figures, the invariants' violations among them.
    public func run() -> Figures {
        driver.handle(.start(checkURL: ""))
        driver.handle(
            .resolved(generation: 0, .success(order.compactMap { Self.addresses[$0] }), routedFamilies: routedFamilies))
        for family in IPFamily.allCases { driver.handle(.path(family, .route(verdict(family)))) }
        while figures.violations.isEmpty {
            let next = min(queue.nextTime ?? .distantFuture, wake ?? .distantFuture)
            guard next <= end else { break }
            now = next
            if queue.nextTime == next, let (_, event) = queue.removeFirst() {
                handle(event)
            } else {
                driver.handle(.timeout)
            }
        }
        now = end
        noteAllFull()
        return figures
    }

    private func handle(_ event: Event) {
        switch event {
        case .reply(let family, let sequence, let token):
            driver.handle(.path(family, .probe(.reply(sequence: sequence, token: token, via: .icmp))))
        case .fault(let fault):
            switch fault.kind {
            case .blackhole: blackholed[fault.family] = true
            case .restore: blackholed[fault.family] = false
            case .routeLost, .routeBack:
                routed[fault.family] = fault.kind == .routeBack
                tellRoutes()
                checkNat64()
            case .nat64Prefix(let lifetime):
                prefixUntil = lifetime == 0 ? nil : now + .seconds(lifetime)
                if let until = prefixUntil { queue.add(.prefixExpires(at: until), at: until) }
                tellRoutes()
                checkNat64()
            }
        case .prefixExpires(let at):
            guard prefixUntil == at else { return }
            prefixUntil = nil
            tellRoutes()
            checkNat64()
        }
    }

    /// Each path's route, as the engine would say it now (the routes, the prefix, the watched address).
    private func tellRoutes() {
        for family in IPFamily.allCases { driver.handle(.path(family, .route(verdict(family)))) }
    }

    /// The route to what `family`'s path watches: an IPv6 address (the IPv4 path's through NAT64) goes
    /// by IPv6's route, which carries the advertised prefix.
    private func verdict(_ family: IPFamily) -> ReachabilityVerdict {
        let routeFamily = watched[family]?.ipFamily ?? family
        guard routed[routeFamily] == true else {
            return ReachabilityVerdict(usable: false, reason: "no route to \(watched[family].map { "\($0)" } ?? "")")
        }
        var verdict = ReachabilityVerdict(
            usable: true, interface: "eth0", kind: .ethernet,
            source: routeFamily == .v4 ? "198.18.0.2" : "2001:db8:1::2")
        if routeFamily == .v6, prefixUntil != nil { verdict.nat64Prefix = Self.prefix }
        verdict.routedFamilies = routedFamilies ?? []
        return verdict
    }

    /// While IPv4 has no route and the prefix is advertised, the IPv4 path probes the synthesized
    /// address and says so; otherwise IPv4 natively. The prefix published is the one advertised.
    private func checkNat64() {
        // The prefix of the network IPv6's route goes over: none without that route.
        let advertised = prefixUntil != nil && routed[.v6] == true
        let expected = advertised ? "\(Self.prefix)" : ""
        if state.nat64Prefix != expected {
            violation("Nat64Prefix '\(state.nat64Prefix)' while the router advertises '\(expected)'")
        }
        guard let v4 = Self.addresses[.v4], let aimedV4 = aimed[.v4] else { return }
        let throughNat64 = routed[.v4] != true && advertised
        let wanted = throughNat64 ? Self.prefix.synthesize(v4) : v4
        if aimedV4 != wanted { violation("IPv4 probes go to \(aimedV4), not \(wanted.map { "\($0)" } ?? "-")") }
    }

    // MARK: The world the driver acts on

    public func resolve(_ host: String, family: AddressFamily, generation: UInt64) {
        driver.handle(
            .resolved(
                generation: generation, .success(order.compactMap { Self.addresses[$0] }),
                routedFamilies: routedFamilies))
    }

    public func cancelResolutions() {}

    /// No NAT64 here: `ipv4only.arpa` has no address.
    public func resolveNat64(generation: UInt64) {
        driver.handle(
            .nat64Resolved(generation: generation, .failure(ResolverFailure(message: "cannot resolve ipv4only.arpa"))))
    }
    public func watchRoute(_ family: IPFamily, _ address: IPAddress?) {
        let before = watched[family]
        watched[family] = address
        // A new destination: the engine's word on its route follows.
        if address != before { driver.handle(.path(family, .route(verdict(family)))) }
    }

    public func aimProbes(_ family: IPFamily, at address: IPAddress?) -> ProbeMethod? {
        aimed[family] = address
        return address == nil ? nil : .icmpDatagram
    }

    public func send(_ family: IPFamily, sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        figures.probes[family, default: 0] += 1
        if allFullSince != nil { figures.probesWhileAllFull[family, default: 0] += 1 }
        if firstSends[family] == nil {
            firstSends[family] = now
            if let other = firstSends[family == .v4 ? .v6 : .v4], other != now {
                violation("the families' first probes went out \(now - other) apart")
            }
        }
        let pathFamily = aimed[family]?.ipFamily ?? family
        guard routed[pathFamily] == true else {
            return driver.handle(
                .path(
                    family,
                    .probe(
                        .sendFailed(
                            sequence: sequence, transient: false,
                            reason: "cannot send: Network is unreachable"))))
        }
        // Through NAT64 the IPv6 path carries it: both its blackhole and the prefix's translator matter.
        guard blackholed[pathFamily] != true, pathFamily == family || prefixUntil != nil else { return }
        queue.add(
            .reply(family, sequence: sequence, token: token),
            at: now + .milliseconds(1) + .nanoseconds(random.next() % 20_000_000))
    }

    public func startCheck(_ family: IPFamily, url: String, generation: UInt64, limitMilliseconds: UInt32) {}
    public func cancelCheck(_ family: IPFamily) {}

    public func sampleTraffic(
        _ family: IPFamily, generation: UInt64, host: IPAddress, interface: String,
        inline: Bool
    ) -> TrafficSampling {
        .now(TrafficSample(), cost: .zero)
    }

    public func reportChanged(_ family: IPFamily, old: ProbeReport, new: ProbeReport) {}

    /// The dual-stack world's routes are on-link: nothing asks a next hop.
    public func checkNeighbor(
        _ family: IPFamily, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64, routine: Bool
    ) {
        figures.violations.append("asked next hop \(gateway) on an on-link route")
    }

    public func probeBeyond(_ family: IPFamily, host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64) {
        figures.violations.append("probed past gateway \(gateway) on an on-link route")
    }

    public func publish(_ update: (inout MonitorState) -> Void) {
        update(&state)
        checkHeadline()
        noteAllFull()
        let current = (state.status, state.connectivity)
        if let last = lastPublished, figures.firstFull != nil {
            if last.1 != current.1 { figures.headlineTransitions += 1 }
            if last.0 != current.0 { figures.statusChanges += 1 }
        }
        if state.connectivity == .full && figures.firstFull == nil { figures.firstFull = now }
        lastPublished = current
    }

    public func verdictReady() {}

    public func wakeUp(at deadline: Instant?) {
        wake = deadline
    }

    public func settled() {}

    // MARK: Invariants

    private func violation(_ text: String) {
        figures.violations.append("at \(now.sinceOrigin): \(text)")
    }

    private static func rank(_ connectivity: Connectivity) -> Int {
        switch connectivity {
        case .full: 3
        case .portal: 2
        case .limited: 1
        case .none, .unknown: 0
        }
    }

    /// The headline is never below the best family, is full whenever one family is, and waits
    /// (unknown) only while some family has no verdict.
    private func checkHeadline() {
        let families = [state.ipv4.connectivity, state.ipv6.connectivity]
        if families.contains(.full) && state.connectivity != .full {
            violation("a family is full but Connectivity is \(state.connectivity)")
        }
        if state.connectivity == .unknown {
            if !families.contains(.unknown) {
                violation("Connectivity unknown while every family has a verdict: \(families)")
            }
        } else if let best = families.map(Self.rank).max(), Self.rank(state.connectivity) < best {
            violation("Connectivity \(state.connectivity) below the best family: \(families)")
        }
    }

    /// While every family is full, the time it lasts (the cost rule's denominator).
    private func noteAllFull() {
        let allFull = state.ipv4.connectivity == .full && state.ipv6.connectivity == .full
        if let since = allFullSince, !allFull || now == end {
            figures.allFull += now - since
            allFullSince = allFull && now != end ? now : nil
        } else if allFull && allFullSince == nil {
            allFullSince = now
        }
    }
}
