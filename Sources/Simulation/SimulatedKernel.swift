import Glibc
import NetAddress
import NetCore
import ReachabilityRules
import Timekeeping

/// The kernel as the reachability core sees it: links, their addresses and default
/// routes, a receive queue that overruns, dumps that are never lost (the kernel
/// paces them to the reader), and route lookups whose answers can be lost with the
/// events when the queue overflows.
struct SimulatedKernel {
    struct Interface {
        var link: Link
        /// The interface's address and default route in each family the world has.
        var addresses: [InterfaceAddress]
        var routes: [Route]
        var routePresent = true
    }

    private(set) var interfaces: [Int32: Interface] = [:]
    /// Datagrams waiting to be read; `droppable` ones are lost on overflow.
    private var queue: [(messages: [RouteMessage], droppable: Bool)] = []
    private(set) var overrunPending = false
    var capacity = 32
    /// The families whose default routes are withdrawn everywhere (a dual-stack network losing one).
    private(set) var withdrawn = IPFamilies()
    /// The families whose packets vanish past this machine (a blackhole upstream).
    var blackholed = IPFamilies()
    /// Until when the network's NAT64 prefix is valid (and its translator works); nil: it has none.
    private(set) var nat64Until: Instant?
    /// The lifetime the routers advertise it with (refreshed whenever they advertise).
    private var nat64Lifetime: UInt16 = 0
    /// What each interface's router last advertised: the prefix valid until then (a router speaks only on the
    /// links it routes for, so one without an IPv6 route heard neither the prefix nor its withdrawal).
    private(set) var advertisedUntil: [Int32: Instant] = [:]
    /// When each interface's IPv6 default route went away while its router's word stood (it stands 2 s more), and
    /// until when that word stood then (it stands again if the route is back within the 2 s).
    private var routeGone: [Int32: (at: Instant, until: Instant)] = [:]

    static let up = KernelNumbers.linkUp, running = KernelNumbers.linkRunning, lowerUp = KernelNumbers.linkLowerUp
    /// The prefix a dual-stack network's routers advertise (RFC 8781), through which IPv4 goes when it has no route.
    static let nat64Prefix = Nat64Prefix(
        prefix: .v6(AddressBytes([0, 0x64, 0xff, 0x9b] + [UInt8](repeating: 0, count: 12))), length: 96)

    init(families: [IPFamily]) {
        for (index, name, kind, priority) in [
            (Int32(2), "eth0", "veth", UInt32(100)), (Int32(3), "wlan0", "wifi", UInt32(600)),
        ] {
            let link = Link(
                index: index, name: name, flags: Self.up | Self.running | Self.lowerUp, operState: 6,
                type: 1, kind: kind)
            var interface = Interface(link: link, addresses: [], routes: [])
            for family in families {
                let v4 = family == .v4
                let address = v4 ? IPAddress.v4([198, 18, UInt8(index), 1]) : Simulation.v6(UInt8(index), 1)
                interface.addresses.append(InterfaceAddress(index: index, address: address, prefixLength: v4 ? 24 : 64))
                interface.routes.append(
                    Route(
                        family: UInt8(family.number), outputInterface: index,
                        gateway: Simulation.gatewayAddress(index, v6: !v4),
                        preferredSource: address, priority: priority))
            }
            interfaces[index] = interface
        }
        routesChanged(now: .origin)
    }

    var hasQueued: Bool { overrunPending || !queue.isEmpty }

    /// What one read returns: the overrun first (ENOBUFS), then a datagram.
    enum Read { case overrun, datagram([RouteMessage]) }

    mutating func read() -> Read? {
        if overrunPending {
            overrunPending = false
            return .overrun
        }
        guard !queue.isEmpty else { return nil }
        return .datagram(queue.removeFirst().messages)
    }

    /// The reader stalled: every event and lookup answer queued is lost.
    mutating func overflow() {
        queue.removeAll { $0.droppable }
        overrunPending = true
    }

    private mutating func enqueue(_ messages: [RouteMessage], droppable: Bool = true) {
        if droppable && queue.count >= capacity {
            overflow()
            return
        }
        queue.append((messages, droppable))
    }

    mutating func answer(_ request: ReachabilityCore.Request) {
        switch request {
        case .dump(.links, let sequence):
            enqueue(
                interfaces.values.sorted { $0.link.index < $1.link.index }.map { .newLink($0.link) }, droppable: false)
            enqueue([.done(sequence: sequence)], droppable: false)
        case .dump(.addresses, let sequence):
            enqueue(interfaces.values.flatMap { $0.addresses.map { .newAddress($0) } }, droppable: false)
            enqueue([.done(sequence: sequence)], droppable: false)
        case .dump(.routes, let sequence):
            enqueue(presentRoutes.map { .newRoute($0, sequence: sequence) }, droppable: false)
            enqueue([.done(sequence: sequence)], droppable: false)
        case .routeLookup(let target, let sequence):
            switch lookup(target) {
            case .route(let route): enqueue([.newRoute(route, sequence: sequence)])
            case .failed(let code): enqueue([.error(sequence: sequence, errno: code)])
            }
        }
    }

    /// The routes in the kernel's table, lowest metric first (kept up to date by every change).
    private var presentRoutes: [Route] = []

    private mutating func routesChanged(now: Instant) {
        presentRoutes = Self.present(interfaces, withdrawn: withdrawn)
        // A router that is no longer the gateway of an IPv6 route on its link is no longer heard there: what it
        // announced ends once its route has been gone 2 s (the route core does the same: a route deleted and added
        // again, as NetworkManager replaces one, changes nothing).
        for index in interfaces.keys {
            if presentRoutes.contains(where: { Self.family(of: $0) == .v6 && $0.outputInterface == index }) {
                if let gone = routeGone.removeValue(forKey: index), now < gone.at + Self.routeGoneGrace {
                    advertisedUntil[index] = gone.until
                }
            } else if let until = advertisedUntil[index], routeGone[index] == nil {
                routeGone[index] = (now, until)
                advertisedUntil[index] = min(until, now + Self.routeGoneGrace)
            }
        }
    }

    static let routeGoneGrace = Duration.seconds(2)

    /// Whether the IPv6 route of the interface named `name` went away so lately that the route core, which hears of
    /// it a moment later (or only at the next dump), may still keep its router's word.
    func routerWordEnding(onInterfaceNamed name: String, now: Instant) -> Bool {
        guard let (index, _) = interfaces.first(where: { $0.value.link.name == name }), let gone = routeGone[index]
        else { return false }
        return now < gone.at + Self.routeGoneGrace + .seconds(1)
    }

    private static func family(of route: Route) -> IPFamily { route.family == UInt8(IPFamily.v6.number) ? .v6 : .v4 }

    /// The interface's routes the kernel would hold were the link up and its routes present.
    private func liveRoutes(_ interface: Interface) -> [Route] {
        interface.routes.filter { !withdrawn.contains(Self.family(of: $0)) }
    }

    /// The kernel's choice: the default route with the lowest metric whose link is up.
    func lookup(_ target: IPAddress) -> RouteLookup {
        guard var route = presentRoutes.first(where: { IPFamily(number: $0.family) == target.ipFamily }) else {
            return .failed(errno: ENETUNREACH)
        }
        route.destination = target
        route.destinationLength = target.bitLength
        return .route(route)
    }

    /// The table a reader that saw everything would hold.
    var wholeTable: LinkTable {
        var table = LinkTable()
        for interface in interfaces.values {
            table.apply(.newLink(interface.link))
            for address in interface.addresses { table.apply(.newAddress(address)) }
        }
        for route in presentRoutes { table.apply(.newRoute(route, sequence: 0)) }
        return table
    }

    /// Whether a probe sent now can leave: a route exists (else the send fails with ENETUNREACH).
    func canSend(to target: IPAddress) -> Bool {
        if case .route = lookup(target) { return true }
        return false
    }

    /// Whether a probe sent now reaches the far side: a route over a link with carrier, its family not
    /// blackholed, and an address in the NAT64 prefix only while the prefix (and its translator) is there.
    func delivers(to target: IPAddress, now: Instant) -> Bool {
        guard case .route(let route) = lookup(target), let index = route.outputInterface,
            let link = interfaces[index]?.link
        else {
            return false
        }
        if Self.nat64Prefix.extract(target) != nil, (nat64Until ?? .origin) <= now { return false }
        return link.isUp && link.hasCarrier && link.isRunning && !blackholed.contains(target.ipFamily)
    }

    /// Whether `family` has a default route now.
    func routes(_ family: IPFamily) -> Bool {
        presentRoutes.contains { Self.family(of: $0) == family }
    }

    /// The NAT64 prefix the router of the interface named `name` advertised, still valid (nil: none, or it expired).
    func advertisedPrefix(onInterfaceNamed name: String, now: Instant) -> Nat64Prefix? {
        guard let (index, _) = interfaces.first(where: { $0.value.link.name == name }),
            let until = advertisedUntil[index], until > now
        else { return nil }
        return Self.nat64Prefix
    }

    /// When the prefix advertised on the interface named `name` ends.
    func advertisementEnds(onInterfaceNamed name: String) -> Instant? {
        interfaces.first(where: { $0.value.link.name == name }).flatMap { advertisedUntil[$0.key] }
    }

    // MARK: Faults

    mutating func setAdministrativelyUp(_ index: Int32, _ up: Bool, now: Instant) {
        guard var interface = interfaces[index], interface.link.isUp != up else { return }
        interface.link.flags = up ? interface.link.flags | Self.up : interface.link.flags & ~Self.up
        interfaces[index] = interface
        routesChanged(now: now)
        enqueue([.newLink(interface.link)])
        // The kernel deletes a downed link's routes; whoever manages it adds them back.
        if interface.routePresent {
            for route in liveRoutes(interface) { enqueue([up ? .newRoute(route, sequence: 0) : .deleteRoute(route)]) }
            if up { readvertiseNat64(on: index, now: now) }
        }
    }

    mutating func setCarrier(_ index: Int32, _ on: Bool) {
        guard var interface = interfaces[index], interface.link.hasCarrier != on else { return }
        let bits = Self.lowerUp | Self.running
        interface.link.flags = on ? interface.link.flags | bits : interface.link.flags & ~bits
        interfaces[index] = interface
        enqueue([.newLink(interface.link)])
    }

    mutating func setRoute(_ index: Int32, present: Bool, now: Instant) {
        guard var interface = interfaces[index], interface.routePresent != present else { return }
        interface.routePresent = present
        interfaces[index] = interface
        routesChanged(now: now)
        guard interface.link.isUp else { return }
        // A manager installs a router's route once it has read the router's advertisement: that comes first.
        if present { readvertiseNat64(on: index, now: now) }
        for route in liveRoutes(interface) {
            enqueue([present ? .newRoute(route, sequence: 0) : .deleteRoute(route)])
        }
    }

    /// A manager replacing the interface's routes (NetworkManager, when a router's preference changes): each deleted
    /// (`replacing` true) and added again at once (false); the routers say nothing, and what they announced stands.
    /// False when the interface has no route to replace.
    mutating func replaceRoutes(_ index: Int32, replacing: Bool) -> Bool {
        guard var interface = interfaces[index], interface.routePresent != replacing, interface.link.isUp else {
            return false
        }
        interface.routePresent = !replacing
        interfaces[index] = interface
        presentRoutes = Self.present(interfaces, withdrawn: withdrawn)
        for route in liveRoutes(interface) {
            enqueue([replacing ? .deleteRoute(route) : .newRoute(route, sequence: 0)])
        }
        return true
    }

    private static func present(_ interfaces: [Int32: Interface], withdrawn: IPFamilies) -> [Route] {
        interfaces.values.filter { $0.routePresent && $0.link.isUp }.flatMap(\.routes)
            .filter { !withdrawn.contains(family(of: $0)) }
            .sorted { $0.priority < $1.priority }
    }

    /// A router whose IPv6 route is back advertises the prefix again (if the network still has one), with its
    /// whole lifetime.
    private mutating func readvertiseNat64(on index: Int32, now: Instant) {
        guard let until = nat64Until, until > now, !withdrawn.contains(.v6) else { return }
        nat64Until = now + .seconds(UInt64(nat64Lifetime) * 8)
        advertiseNat64(now: now, only: index)
    }

    /// `family`'s default routes withdrawn from every interface, or given back.
    mutating func setFamilyRoutes(_ family: IPFamily, present: Bool, now: Instant) {
        guard withdrawn.contains(family) == present else { return }
        if present { withdrawn.remove(family) } else { withdrawn.insert(family) }
        routesChanged(now: now)
        for index in interfaces.keys.sorted() {
            guard let interface = interfaces[index], interface.routePresent, interface.link.isUp else { continue }
            for route in interface.routes where Self.family(of: route) == family {
                enqueue([present ? .newRoute(route, sequence: 0) : .deleteRoute(route)])
            }
            if present && family == .v6 { readvertiseNat64(on: index, now: now) }
        }
    }

    /// The routers of every IPv6 link advertise the NAT64 prefix for `lifetime` seconds (RFC 8781: in units of
    /// 8 s; 0 withdraws it).
    mutating func advertiseNat64(lifetimeSeconds lifetime: UInt32, now: Instant) {
        nat64Lifetime = UInt16(min(lifetime / 8, 0x1FFF))
        nat64Until = nat64Lifetime == 0 ? nil : now + .seconds(UInt64(nat64Lifetime) * 8)
        advertiseNat64(now: now)
    }

    /// The routers' advertisement of the prefix as it stands, on every link with an IPv6 route through them.
    private mutating func advertiseNat64(now: Instant, only: Int32? = nil) {
        let units = nat64Lifetime
        guard units > 0 || only == nil else { return }
        let field = units << 3 // prefix length code 0: /96
        let option: [UInt8] =
            [RouterOption.pref64Type, 2, UInt8(field >> 8), UInt8(field & 0xFF)]
            + Array(Self.nat64Prefix.prefix.bytes).prefix(12)
        // A router advertises on the links it routes for: those with an IPv6 default route through it now.
        for index in interfaces.keys.sorted() {
            guard only == nil || only == index,
                presentRoutes.contains(where: { Self.family(of: $0) == .v6 && $0.outputInterface == index })
            else {
                continue
            }
            advertisedUntil[index] = nat64Until
            enqueue([
                .routerOptions(index: index, options: option, source: Simulation.gatewayAddress(index, v6: true))
            ])
        }
    }

    /// Everything back as it was: every family routed and delivered.
    mutating func heal(now: Instant) {
        blackholed = IPFamilies()
        for family in IPFamily.allCases { setFamilyRoutes(family, present: true, now: now) }
    }

    /// An unrelated event (another address coming and going), to fill the queue.
    mutating func churn(_ n: UInt8) {
        let address = InterfaceAddress(index: 2, address: .v4([198, 19, 0, n]), prefixLength: 32)
        enqueue([.newAddress(address)])
        enqueue([.deleteAddress(address)])
    }
}
