import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// What a target's driver asks of the world around it: the daemon's sockets, threads and
/// model, or the simulation's. Each call only starts something or hands a value over; what
/// comes of it comes back as an event through `TargetDriver.handle`.
public protocol TargetWorld: AnyObject {
    /// The clock the core runs on (monotonic).
    var now: Instant { get }
    /// The families that have a default route now (nil: the routes are not watched).
    var routedFamilies: IPFamilies? { get }
    /// The index of the interface named `name` (nil: none), for a literal Host's `%zone`.
    func interfaceIndex(named name: String) -> UInt32?
    /// Look a name up off the loop (an address never gets here); answer with `.resolved`.
    func resolve(_ host: String, family: AddressFamily, generation: UInt64)
    func cancelResolutions()
    /// Look up `ipv4only.arpa`'s IPv6 addresses off the loop (RFC 7050); answer with `.nat64Resolved`.
    func resolveNat64(generation: UInt64)
    /// Watch the route to `address` (nil: none) for `family`'s path.
    func watchRoute(_ family: IPFamily, _ address: IPAddress?)
    /// Send `family`'s probes to `address` from now on (nil: nowhere); how they will go, nil when they cannot.
    func aimProbes(_ family: IPFamily, at address: IPAddress?) -> ProbeMethod?
    func send(_ family: IPFamily, sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool)
    /// GET `url` over `family` within the limit; answer with `.checkAnswered`.
    func startCheck(_ family: IPFamily, url: String, generation: UInt64, limitMilliseconds: UInt32)
    func cancelCheck(_ family: IPFamily)
    /// Sample the connections on `interface` routed like `host` (`route`, the route core's word on its route).
    func sampleTraffic(
        _ family: IPFamily, generation: UInt64, host: IPAddress, route: HostRoute?, interface: String, inline: Bool
    ) -> TrafficSampling
    /// Ask `family`'s next hop `gateway` on interface `interfaceIndex` (up to 3 tries 200 ms apart); answer with `.neighborAnswered`.
    func checkNeighbor(
        _ family: IPFamily, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64, routine: Bool
    )
    /// Send one echo to `host` with TTL `hops`; a Time Exceeded from past `gateway` is `.carried`, else `.silent`
    /// (answer with `.beyondAnswered`).
    func probeBeyond(_ family: IPFamily, host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64)
    /// `family`'s probe report changed (for logs).
    func reportChanged(_ family: IPFamily, old: ProbeReport, new: ProbeReport)
    /// The state the core computes changed: publish it, written by `update` over what was published before.
    func publish(_ update: (_ state: inout MonitorState) -> Void)
    /// A probe ended and its verdict is published: pending Checks may answer.
    func verdictReady()
    /// Hand the core `.timeout` at `deadline` (nil: no wake-up); replaces the last one asked for.
    func wakeUp(at deadline: Instant?)
    /// The core is quiet after an event: let go of what finished probes hold.
    func settled()
}

/// How a traffic sample was taken: on the spot (nil: it could not be), or later through `.trafficSampled`.
public enum TrafficSampling {
    case now(TrafficSample?, cost: Duration)
    case later
}

/// The one pump around a `TargetCore`, run by the daemon and by the simulation alike: events
/// in, the core's actions carried out through a `TargetWorld`, in order. No re-entry: what
/// happens while actions are carried out is queued and handed to the core after them. The
/// transport's answer to `.probe` (`.probing`) goes before anything else queued, since the
/// core sends nothing until it knows how. An address needs no lookup: the driver answers it.
public final class TargetDriver {
    /// The core, in memory the driver owns (`LentTargetCore`, which says why): its values are read in place
    /// through `core` and `path`, its methods through `ask`.
    @usableFromInline let lent: LentTargetCore
    /// The core as of the last event, lent: read its stored values here, call its methods through `ask`.
    @inlinable public var core: TargetCore {
        unsafeAddress { UnsafePointer(lent.pointer) }
    }
    private unowned let world: any TargetWorld
    // The driver's own state is touched by single operations that call out to nobody (a world's answer is
    // computed before the queue is opened to take it; the core, handed `actions`, reaches nothing outside
    // itself), so no access to it can overlap another: the run-time exclusivity checks are left out.
    @exclusivity(unchecked) private var queue: [Work] = []
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private var driving = false
    /// `.probing` answers queued at the head by the step being carried out.
    @exclusivity(unchecked) private var probingAhead = 0
    /// The service that adopted the driver, and the target's number there: what the target shares with others
    /// behind the same link (its next hop's checks) is asked of it (nil: of the world, unshared).
    @exclusivity(unchecked) weak var service: ServiceDriver?
    @exclusivity(unchecked) var number = 0
    /// Told each step's actions before they are carried out (for tests that check the core's output rules).
    @exclusivity(unchecked) public var observeStep: (([TargetCore.Action]) -> Void)?

    private enum Work {
        case event(TargetCore.Event)
        case actions([TargetCore.Action])
    }

    public init(core: TargetCore, world: any TargetWorld) {
        lent = LentTargetCore(core)
        self.world = world
    }

    deinit {
        lent.free()
    }

    /// What `question` says of the core, asked in place: a method called on `core` runs on a copy.
    public func ask<Answer>(_ question: (TargetCore) -> Answer) -> Answer { Self.ask(&lent.pointer.pointee, question) }

    private static func ask<Answer>(_ core: inout TargetCore, _ question: (TargetCore) -> Answer) -> Answer {
        question(core)
    }

    /// `state` written by the core in place (a closure handed the core, as `ask`'s, gets a copy of it).
    @inline(never)
    private static func update(_ core: inout TargetCore, _ state: inout MonitorState) { core.update(&state) }

    /// `family`'s path of the core, lent in place like `core`.
    @inlinable public func path(_ family: IPFamily) -> UnsafePointer<PathCore> { lent.path(family) }

    /// Hands `event` to the core (after whatever is being carried out now).
    public func handle(_ event: TargetCore.Event) {
        if driving { return queue.append(.event(event)) }
        lent.pointer.pointee.handle(event, now: world.now, into: &actions)
        drive()
    }

    /// A Check wants a fresh verdict: false when there is nothing to probe (see `TargetCore.check`).
    public func check() -> Bool {
        guard !driving else {
            // `actions` is being carried out: these wait in an array of their own.
            let (probing, actions) = lent.pointer.pointee.check(now: world.now)
            queue.append(.actions(actions))
            return probing
        }
        let probing = lent.pointer.pointee.check(now: world.now, into: &actions)
        drive()
        return probing
    }

    /// The core's actions for the step being carried out, in storage kept from step to step.
    @exclusivity(unchecked) private var actions: [TargetCore.Action] = []

    /// Carries out `actions`, then what they queued, in order; then the wake-up the core wants.
    private func drive() {
        driving = true
        defer { driving = false }
        carryOut(actions)
        while head < queue.count {
            let work = queue[head]
            head += 1
            switch work {
            case .event(let event):
                lent.pointer.pointee.handle(event, now: world.now, into: &actions)
                carryOut(actions)
            case .actions(let queued):
                carryOut(queued)
            }
        }
        if head > 0 {
            queue.removeAll(keepingCapacity: true)
            head = 0
        }
        world.settled()
        world.wakeUp(at: lent.pointer.pointee.nextWakeup)
    }

    private func carryOut(_ actions: [TargetCore.Action]) {
        observeStep?(actions)
        probingAhead = 0
        for action in actions {
            switch action {
            case .resolve(let host, let family, let generation):
                if let literal = IPAddress(numeric: host, interfaceIndex: world.interfaceIndex(named:)),
                    family.admits(literal)
                {
                    queue.append(
                        .event(
                            .resolved(generation: generation, .success([literal]), routedFamilies: world.routedFamilies)
                        ))
                } else {
                    world.resolve(host, family: family, generation: generation)
                }
            case .cancelResolutions:
                world.cancelResolutions()
            case .resolveNat64(let generation):
                world.resolveNat64(generation: generation)
            case .path(let family, let action):
                carryOut(action, of: family)
            case .publish:
                world.publish { [lent] state in Self.update(&lent.pointer.pointee, &state) }
            case .verdictReady:
                world.verdictReady()
            }
        }
    }

    /// What `family`'s path asks of its world: one world method for each.
    private func carryOut(_ action: PathAsk, of family: IPFamily) {
        switch action {
        case .watchRoute(let address):
            world.watchRoute(family, address)
        case .probe(let address):
            // Each family's answer before anything else queued, in the order asked.
            queue.insert(
                .event(.path(family, .probing(world.aimProbes(family, at: address)))), at: head + probingAhead)
            probingAhead += 1
        case .send(let sequence, let token, let forCheck, let extra, let alsoTCP):
            world.send(family, sequence: sequence, token: token, forCheck: forCheck, extra: extra, alsoTCP: alsoTCP)
        case .startCheck(let url, let generation, let limit):
            world.startCheck(family, url: url, generation: generation, limitMilliseconds: limit)
        case .cancelCheck:
            world.cancelCheck(family)
        case .sampleTraffic(let generation, let host, let route, let interface, let inline):
            if case .now(let sample, let cost) = world.sampleTraffic(
                family, generation: generation, host: host, route: route, interface: interface, inline: inline)
            {
                queue.append(.event(.path(family, .trafficSampled(generation: generation, sample, cost: cost))))
            }
        case .reportChanged(let old, let new):
            world.reportChanged(family, old: old, new: new)
        case .checkNeighbor(let gateway, let index, let source, let generation, let routine):
            if let service {
                let path = ServiceCore.PathKey(target: number, family: family)
                return service.handle(
                    .neighborAsked(
                        path, gateway: gateway, interfaceIndex: index, source: source, generation: generation,
                        routine: routine))
            }
            world.checkNeighbor(
                family, gateway: gateway, interfaceIndex: index, source: source, generation: generation,
                routine: routine)
        case .probeBeyond(let host, let gateway, let hops, let generation):
            world.probeBeyond(family, host: host, gateway: gateway, hops: hops, generation: generation)
        }
    }
}
