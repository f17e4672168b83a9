import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// What the service's driver asks of the world around it: the daemon's fetches, targets and history
/// files, or the simulation's. Each call only starts something or hands a value over; what comes of it
/// comes back as an event through `ServiceDriver.handle`.
public protocol ServiceWorld: AnyObject {
    /// CLOCK_MONOTONIC now.
    var now: Instant { get }
    /// CLOCK_BOOTTIME's lead over CLOCK_MONOTONIC now: it grows only while the machine sleeps.
    var slept: Duration { get }
    /// GET `uri`, `link`'s (`interface`'s) captive-portal API, over verified HTTPS within `limit`; answer with
    /// `.portalAPIFetched`.
    func fetchPortalAPI(link: LinkID, interface: String, uri: String, generation: UInt64, limit: Duration)
    func cancelPortalAPIFetch(link: LinkID)
    /// Ask `gateway` on `link` (interface `interfaceIndex`) from `source`, up to 3 tries 200 ms apart; answer with
    /// `.neighborChecked`.
    func checkNeighbor(link: LinkID, interfaceIndex: Int32, gateway: IPAddress, source: String, number: UInt64)
    func cancelNeighborCheck(link: LinkID, gateway: IPAddress, number: UInt64)
    /// Target `path.target`'s path of `path.family` hears its next hop's answer (ask `generation`), from the check that
    /// went out at `checkedAt`.
    func neighborAnswered(
        _ path: ServiceCore.PathKey, generation: UInt64, _ answer: NeighborAnswer, checkedAt: Instant)
    func log(_ line: String)
    /// Target `path.target`'s path of `path.family` takes `verdict`, with the view of the link it is routed over.
    func route(_ path: ServiceCore.PathKey, _ verdict: ReachabilityVerdict, link: LinkView?)
    /// That path's link `id` says something new (nil: it is gone).
    func linkChanged(_ path: ServiceCore.PathKey, _ id: LinkID, _ view: LinkView?)
    /// Every history suspends (true) or resumes, then every target's engines follow.
    func machineSleeps(_ asleep: Bool)
    /// Every history takes `jump` out; every target's engines suspend and resume.
    func machineSlept(_ jump: Duration)
    func writeHistories()
    /// Every target holds back its first verdict (true), or lets it go.
    func holdFirstVerdicts(_ hold: Bool)
    /// Target `number`'s deadline came: hand it `.timeout`.
    func wakeTarget(_ number: Int)
    /// Call `ServiceDriver.wake` at `deadline` (nil: no wake-up): the one wake-up of the service and every target it
    /// adopted; replaces the last one asked for.
    func wakeUp(at deadline: Instant?)
}

/// The one pump around a `ServiceCore`, run by the daemon and by the simulation alike: events in, the
/// core's actions carried out through a `ServiceWorld`, in order. No re-entry: an event handed in while
/// actions are carried out (a target hearing of a sleep may wake) waits for them. It holds the one "when next"
/// of the whole set: the earliest deadline of its core and of every target's driver it adopted (`wake`).
public final class ServiceDriver {
    public private(set) var core = ServiceCore()
    private unowned let world: any ServiceWorld
    private var queue: [ServiceCore.Event] = []
    private var driving = false
    /// Every target's driver, in the order of their numbers, read for their deadlines.
    private var targets: [(number: Int, driver: TargetDriver)] = []
    /// Told each step's actions before they are carried out (for tests).
    public var observeStep: (([ServiceCore.Action]) -> Void)?

    public init(world: any ServiceWorld) {
        self.world = world
    }

    /// Hands `event` to the core (after whatever is being carried out now).
    public func handle(_ event: ServiceCore.Event) {
        if driving { return queue.append(event) }
        driving = true
        defer { driving = false }
        let world = self.world
        var next: ServiceCore.Event? = event
        var head = 0
        while let event = next {
            let actions = core.handle(event, now: world.now, slept: world.slept)
            if !actions.isEmpty { carryOut(actions) }
            next = head < queue.count ? queue[head] : nil
            head += 1
        }
        queue.removeAll(keepingCapacity: true)
        world.wakeUp(at: nextWakeup)
    }

    /// Target `number`'s driver joins the set whose one wake-up this driver keeps.
    public func adopt(_ driver: TargetDriver, number: Int) {
        targets.removeAll { $0.number == number }
        targets.insert((number, driver), at: targets.firstIndex { $0.number > number } ?? targets.endIndex)
        driver.service = self
        driver.number = number
        world.wakeUp(at: nextWakeup)
    }

    /// Target `number` is gone.
    public func release(number: Int) {
        for target in targets where target.number == number { target.driver.service = nil }
        targets.removeAll { $0.number == number }
    }

    /// A target's deadline moved (its driver told its world): the one wake-up follows.
    public func targetWakeupMoved() {
        world.wakeUp(at: nextWakeup)
    }

    /// The earliest deadline of the whole set: the core's own and every adopted target's.
    public var nextWakeup: Instant? {
        var earliest = ask { $0.nextWakeup }
        for target in targets {
            if let wake = target.driver.core.nextWakeup, earliest.map({ wake < $0 }) ?? true { earliest = wake }
        }
        return earliest
    }

    /// The one wake-up came. The one rule of it: a sleep nobody announced is looked for before any target handles
    /// its deadline (no probe times out across a sleep); then each target whose deadline came handles it, in the
    /// order of their numbers; then the core its own.
    public func wake() {
        let now = world.now
        let due = targets.filter { $0.driver.core.nextWakeup.map { $0 <= now } ?? false }
        if !due.isEmpty { handle(.targetWakes) }
        // Each deadline read again when its turn comes: the sleep's suspend and resume may have moved it.
        for target in due where target.driver.core.nextWakeup.map({ $0 <= now }) ?? false {
            world.wakeTarget(target.number)
        }
        if let own = ask({ $0.nextWakeup }), own <= now { handle(.timeout) }
        world.wakeUp(at: nextWakeup)
    }

    /// What `question` says of the core, asked in place (a struct stored in a class is copied whole to be read).
    public func ask<Answer>(_ question: (ServiceCore) -> Answer) -> Answer { Self.ask(&core, question) }

    private static func ask<Answer>(_ core: inout ServiceCore, _ question: (ServiceCore) -> Answer) -> Answer {
        question(core)
    }

    private func carryOut(_ actions: [ServiceCore.Action]) {
        observeStep?(actions)
        for action in actions {
            switch action {
            case .fetchPortalAPI(let link, let interface, let uri, let generation, let limit):
                world.fetchPortalAPI(link: link, interface: interface, uri: uri, generation: generation, limit: limit)
            case .cancelPortalAPIFetch(let link):
                world.cancelPortalAPIFetch(link: link)
            case .checkNeighbor(let link, let interfaceIndex, let gateway, let source, let number):
                world.checkNeighbor(
                    link: link, interfaceIndex: interfaceIndex, gateway: gateway, source: source, number: number)
            case .cancelNeighborCheck(let link, let gateway, let number):
                world.cancelNeighborCheck(link: link, gateway: gateway, number: number)
            case .neighborAnswered(let path, let generation, let answer, let checkedAt):
                world.neighborAnswered(path, generation: generation, answer, checkedAt: checkedAt)
            case .log(let line):
                world.log(line)
            case .route(let path, let verdict, let link):
                world.route(path, verdict, link: link)
            case .link(let path, let id, let view):
                world.linkChanged(path, id, view)
            case .sleep(let asleep):
                world.machineSleeps(asleep)
            case .slept(let jump):
                world.machineSlept(jump)
            case .writeHistories:
                world.writeHistories()
            case .holdFirstVerdicts(let hold):
                world.holdFirstVerdicts(hold)
            }
        }
    }
}
