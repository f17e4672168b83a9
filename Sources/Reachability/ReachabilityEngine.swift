import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import ReachabilityRules
import Timekeeping

/// What a monitor needs of the reachability engine for its target: a `Watch` on it (or a stand-in).
public protocol RouteWatch: AnyObject {
    var target: IPAddress? { get set }
    var families: [IPFamily] { get set }
    var verdict: ReachabilityVerdict? { get }
    var table: LinkTable { get }
    var onChange: (ReachabilityVerdict) -> Void { get set }
}

/// Knows at once whether the kernel can route to the target, and over what: the
/// driver around `ReachabilityCore`.
///
/// One NETLINK_ROUTE socket, subscribed to link, address and route events,
/// carries the initial dumps, the events and the route lookups, so they
/// arrive in the order the kernel produced them. Events are coalesced into one
/// route lookup per loop turn; the verdict is delivered only when it changes.
public final class ReachabilityEngine {
    public typealias Statistics = ReachabilityCore.Statistics

    private let loop: MainLoop
    private let socket: NetlinkSocket
    private var source: IOSource?
    /// Router advertisements read whole (nil without CAP_NET_RAW: then only the kernel's RTNLGRP_ND_USEROPT).
    private var advertisements: RouterAdvertisementSocket?
    private var advertisementSource: IOSource?
    private var core: ReachabilityCore
    /// The core's next deadline (`ReachabilityCore.Timer`: a dump retried, a NAT64 prefix's lifetime).
    private let wakeup: WakeupTimer
    /// What is handed to the core while its outputs are carried out, kept for after them (see `enter`).
    private var queued: [(inout ReachabilityCore) -> Void] = []
    /// Told why a router advertisement's option was not taken (for the log; bounded by the core).
    public var onIgnoredRouterOption: ((String) -> Void)?
    /// The captive-portal API URIs routers announce changed: each interface's, by name (RFC 8910).
    public var onPortalAPIsChanged: (([String: String]) -> Void)?
    public var portalAPIs: [String: String] { ask { $0.portalAPIs } }
    /// The NAT64 prefixes routers advertise changed: each interface's, by index (RFC 8781).
    public var onNat64PrefixesChanged: (([Int32: Nat64Prefix]) -> Void)?
    public var nat64Prefixes: [Int32: Nat64Prefix] { ask { $0.nat64Prefixes } }
    /// The kernel's links changed (their indexes and names, the table whole): see `linkNames`.
    public var onLinksChanged: (([Int32: String]) -> Void)?
    public var linkNames: [Int32: String] { ask { $0.linkNames } }
    /// Every target's watch, by its id in the core (the engine has no target of its own).
    private var watches: [ReachabilityCore.TargetID: (ReachabilityVerdict) -> Void] = [:]

    public var table: LinkTable { core.table }
    public var statistics: Statistics { core.statistics }

    /// One more target on the same socket and table: its own address, families and verdict. It keeps
    /// the engine alive (the engine holds it only weakly), so owners may let go of the two in any order.
    public final class Watch: RouteWatch {
        private let engine: ReachabilityEngine
        private let id: ReachabilityCore.TargetID
        public var onChange: (ReachabilityVerdict) -> Void = { _ in }

        fileprivate init(engine: ReachabilityEngine, id: ReachabilityCore.TargetID) {
            self.engine = engine
            self.id = id
        }

        deinit {
            engine.unwatch(id)
        }

        public var table: LinkTable { engine.core.table }
        public var verdict: ReachabilityVerdict? { engine.ask { $0.verdict(id) } }
        public var target: IPAddress? {
            get { engine.ask { $0.target(id) } }
            set { engine.enter { [id] in $0.setTarget(newValue, for: id) } }
        }
        public var families: [IPFamily] {
            get { engine.ask { $0.families(id) } }
            set { engine.enter { [id] in $0.setFamilies(newValue, for: id) } }
        }
    }

    /// A watch for one more target; it ends with the returned object.
    public func watch(families: [IPFamily] = IPFamily.allCases) -> Watch {
        // The id is the core's answer, needed now; adding a target only asks for a lookup, which comes out with
        // the next outputs (after those under way, when a watcher adds one from a verdict).
        let id = core.addTarget(families: families)
        let watch = Watch(engine: self, id: id)
        watches[id] = { [weak watch] verdict in watch?.onChange(verdict) }
        drive()
        return watch
    }

    private func unwatch(_ id: ReachabilityCore.TargetID) {
        watches[id] = nil
        enter { $0.removeTarget(id) }
    }

    public init(loop: MainLoop, classifier: InterfaceClassifier = InterfaceClassifier()) throws(SystemError) {
        self.loop = loop
        wakeup = WakeupTimer(loop: loop)
        let cards = NeighborCards()
        core = ReachabilityCore(
            classify: classifier.classify,
            describeError: { String(cString: strerror($0)) },
            linkLayerAddress: { cards.card(of: $0, interfaceIndex: $1, now: loop.now()) })
        socket = try NetlinkSocket(
            groups: CLinux_RTMGRP_LINK | CLinux_RTMGRP_IPV4_IFADDR | CLinux_RTMGRP_IPV6_IFADDR
                | CLinux_RTMGRP_IPV4_ROUTE | CLinux_RTMGRP_IPV6_ROUTE)
        // RTNLGRP_ND_USEROPT: router advertisements' options the kernel leaves to user space (PREF64).
        for group in [RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE, RTNLGRP_ND_USEROPT] {
            var number = Int32(group.rawValue)
            _ = setsockopt(socket.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &number, socklen_t(MemoryLayout<Int32>.size))
        }
        source = try loop.watch(fd: socket.fd, interest: .readable) { [unowned self] _ in readAvailable() }
        if let advertisements = RouterAdvertisementSocket() {
            self.advertisements = advertisements
            advertisementSource = try? loop.watch(fd: advertisements.fd, interest: .readable) { [unowned self] _ in
                readAdvertisements()
            }
        }
        wakeup.onFire = { [unowned self] in enter { [loop] in $0.handleTimeout(now: loop.now()) } }
        core.start()
        // The first dump request must go out, or there is no engine.
        for output in core.takeOutputs() {
            guard case .send(let request) = output else { continue }
            try socket.send(Self.bytes(request))
        }
    }

    deinit {
        if let source { loop.remove(source) }
        if let advertisementSource { loop.remove(advertisementSource) }
    }

    /// Router advertisements read whole, bounded per turn like the netlink socket.
    private func readAdvertisements() {
        guard let advertisements else { return }
        reading: for _ in 0..<64 {
            switch advertisements.receive() {
            case .nothing:
                break reading
            case .ignored:
                continue
            case .advertisement(let index, let source, let options):
                core.receive(
                    [.routerOptions(index: index, options: options, source: source)], malformed: 0, now: loop.now())
            }
        }
        drive()
    }

    // The readers run from the loop, never inside a drive: what they read goes into the core at once, and one drive
    // per turn carries out what it all made.
    private func readAvailable() {
        // Bounded per turn so other sources get their share; level-triggered epoll brings us back.
        reading: for _ in 0..<64 {
            switch socket.receive() {
            case .wouldBlock:
                break reading
            case .dropped:
                core.dropped()
            case .overrun:
                core.overrun()
            case .datagram(let bytes):
                let parsed = NetlinkParser.parse(bytes)
                core.receive(parsed.messages, malformed: parsed.malformed, now: loop.now())
            }
        }
        drive()
    }

    /// Whether `drive` is under way: what a watcher does to the engine from a verdict (watch another address,
    /// stop watching) waits in `queued` until the outputs under way are carried out — never a drive inside a
    /// drive, whose verdicts would overtake the ones still queued.
    private var driving = false

    /// Hands `change` to the core now, or after the outputs being carried out; then carries out what follows.
    private func enter(_ change: @escaping (inout ReachabilityCore) -> Void) {
        if driving { return queued.append(change) }
        change(&core)
        drive()
    }

    private func drive() {
        guard !driving else { return }
        driving = true
        defer { driving = false }
        while true {
            var outputs = core.takeOutputs()
            if outputs.isEmpty, !queued.isEmpty {
                let changes = queued
                queued.removeAll()
                for change in changes { change(&core) }
                outputs = core.takeOutputs()
            }
            guard !outputs.isEmpty else { break }
            for output in outputs {
                switch output {
                case .send(let request):
                    do {
                        try socket.send(Self.bytes(request))
                    } catch {
                        let now = loop.now()
                        enter { $0.requestFailed(request, reason: "\(error)", now: now) }
                    }
                case .evaluateAtEndOfTurn:
                    loop.atEndOfTurn { [weak self] in self?.enter { $0.evaluate() } }
                case .verdict(let verdict, let id):
                    watches[id]?(verdict)
                case .ignoredRouterOption(let why):
                    onIgnoredRouterOption?(why)
                case .portalAPIsChanged:
                    onPortalAPIsChanged?(portalAPIs)
                case .nat64PrefixesChanged:
                    onNat64PrefixesChanged?(nat64Prefixes)
                case .linksChanged:
                    onLinksChanged?(linkNames)
                }
            }
        }
        wakeup.arm(at: ask { $0.nextWakeup })
    }

    /// What `question` says of the core, asked in place: a method called on a stored struct runs on a copy.
    fileprivate func ask<Answer>(_ question: (ReachabilityCore) -> Answer) -> Answer { Self.ask(&core, question) }

    private static func ask<Answer>(_ core: inout ReachabilityCore, _ question: (ReachabilityCore) -> Answer) -> Answer
    {
        question(core)
    }

    static func bytes(_ request: ReachabilityCore.Request) -> [UInt8] {
        switch request {
        case .dump(.links, let sequence): NetlinkRequest.dump(Int32(RTM_GETLINK), sequence: sequence)
        case .dump(.addresses, let sequence): NetlinkRequest.dump(Int32(RTM_GETADDR), sequence: sequence)
        case .dump(.routes, let sequence): NetlinkRequest.dump(Int32(RTM_GETROUTE), sequence: sequence)
        case .routeLookup(let target, let sequence): NetlinkRequest.routeLookup(to: target, sequence: sequence)
        }
    }
}
