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
        var address: InterfaceAddress
        var route: Route
        var routePresent = true
    }

    private(set) var interfaces: [Int32: Interface] = [:]
    /// Datagrams waiting to be read; `droppable` ones are lost on overflow.
    private var queue: [(messages: [RouteMessage], droppable: Bool)] = []
    private(set) var overrunPending = false
    var capacity = 32

    static let up = KernelNumbers.linkUp, running = KernelNumbers.linkRunning, lowerUp = KernelNumbers.linkLowerUp

    init(family: IPFamily) {
        let v4 = family == .v4
        for (index, name, kind, priority) in [
            (Int32(2), "eth0", "veth", UInt32(100)), (Int32(3), "wlan0", "wifi", UInt32(600)),
        ] {
            let link = Link(
                index: index, name: name, flags: Self.up | Self.running | Self.lowerUp, operState: 6,
                type: 1, kind: kind)
            let address = v4 ? IPAddress.v4([198, 18, UInt8(index), 1]) : Simulation.v6(UInt8(index), 1)
            let route = Route(
                family: UInt8(family.number), outputInterface: index,
                gateway: Simulation.gatewayAddress(index, v6: !v4),
                preferredSource: address, priority: priority)
            interfaces[index] = Interface(
                link: link,
                address: InterfaceAddress(
                    index: index, address: address,
                    prefixLength: v4 ? 24 : 64), route: route)
        }
        routesChanged()
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
            enqueue(interfaces.values.map { .newAddress($0.address) }, droppable: false)
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

    private mutating func routesChanged() {
        presentRoutes = interfaces.values.filter { $0.routePresent && $0.link.isUp }.map(\.route).sorted {
            $0.priority < $1.priority
        }
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
            table.apply(.newAddress(interface.address))
        }
        for route in presentRoutes { table.apply(.newRoute(route, sequence: 0)) }
        return table
    }

    /// Whether a probe sent now can leave: a route exists (else the send fails with ENETUNREACH).
    func canSend(to target: IPAddress) -> Bool {
        if case .route = lookup(target) { return true }
        return false
    }

    /// Whether a probe sent now reaches the wire: a route over a link with carrier.
    func delivers(to target: IPAddress) -> Bool {
        guard case .route(let route) = lookup(target), let index = route.outputInterface,
            let link = interfaces[index]?.link
        else {
            return false
        }
        return link.isUp && link.hasCarrier && link.isRunning
    }

    // MARK: Faults

    mutating func setAdministrativelyUp(_ index: Int32, _ up: Bool) {
        guard var interface = interfaces[index], interface.link.isUp != up else { return }
        interface.link.flags = up ? interface.link.flags | Self.up : interface.link.flags & ~Self.up
        interfaces[index] = interface
        routesChanged()
        enqueue([.newLink(interface.link)])
        // The kernel deletes a downed link's routes; whoever manages it adds them back.
        if interface.routePresent {
            enqueue([up ? .newRoute(interface.route, sequence: 0) : .deleteRoute(interface.route)])
        }
    }

    mutating func setCarrier(_ index: Int32, _ on: Bool) {
        guard var interface = interfaces[index], interface.link.hasCarrier != on else { return }
        let bits = Self.lowerUp | Self.running
        interface.link.flags = on ? interface.link.flags | bits : interface.link.flags & ~bits
        interfaces[index] = interface
        enqueue([.newLink(interface.link)])
    }

    mutating func setRoute(_ index: Int32, present: Bool) {
        guard var interface = interfaces[index], interface.routePresent != present else { return }
        interface.routePresent = present
        interfaces[index] = interface
        routesChanged()
        guard interface.link.isUp else { return }
        enqueue([present ? .newRoute(interface.route, sequence: 0) : .deleteRoute(interface.route)])
    }

    /// An unrelated event (another address coming and going), to fill the queue.
    mutating func churn(_ n: UInt8) {
        let address = InterfaceAddress(index: 2, address: .v4([198, 19, 0, n]), prefixLength: 32)
        enqueue([.newAddress(address)])
        enqueue([.deleteAddress(address)])
    }
}
