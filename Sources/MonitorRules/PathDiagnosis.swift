import NetAddress
import ProbeRules
import Timekeeping

/// Where one path breaks, found with the fewest packets (INTERFACE.md "Where it broke"), without I/O:
/// the neighbour check of the route's next hop — at a suspicion, when the next hop changes, after a
/// resume, and while healthy at most once per `healthyRecheck` — and, once the next hop
/// answers (or cannot be asked) while Host is silent, one probe whose TTL expires just past it. Its
/// answers stay until Host answers again or the next hop changes.
public struct PathDiagnosis: Sendable {
    public enum Action: Equatable, Sendable {
        /// Ask `gateway` on interface `interfaceIndex` (up to 3 tries 200 ms apart); answer with `neighborAnswered`.
        /// `routine`: the healthy recheck, which an answer another target got for the same next hop within
        /// `healthyRecheck` may stand for (the others — a suspicion, a new next hop, a resume — want a fresh one).
        case checkNeighbor(gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64, routine: Bool)
        /// Send one echo to `host` with TTL (hop limit) `hops`; answer with `beyondAnswered`.
        case probeBeyond(host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64)
    }

    /// The route's next hop as the diagnosis knows it.
    public struct NextHop: Equatable, Sendable {
        public var gateway: IPAddress
        public var interface: String
        public var interfaceIndex: Int32
        public var source: String
        /// The link resolves neighbours: the check applies.
        public var hasNeighbors: Bool

        public init(gateway: IPAddress, interface: String, interfaceIndex: Int32, source: String, hasNeighbors: Bool) {
            self.gateway = gateway
            self.interface = interface
            self.interfaceIndex = interfaceIndex
            self.source = source
            self.hasNeighbors = hasNeighbors
        }
    }

    /// A healthy path's next hop is asked again after this long (never more than one ARP/NS a minute).
    public static let healthyRecheck = Duration.seconds(60)
    /// A broken path is diagnosed again after this long, so Blame follows a fault that moves.
    public static let brokenRecheck = Duration.seconds(60)
    /// The TTL-limited probe's hop count: it expires at the first router past the gateway.
    public static let beyondHops: UInt8 = 2

    public private(set) var nextHop: NextHop? {
        didSet { if nextHop != oldValue { changes &+= 1 } }
    }
    /// The next hop's last answer; nil while none (or no check applies).
    public private(set) var neighbor: NeighborAnswer? {
        didSet { if neighbor != oldValue { changes &+= 1 } }
    }
    public private(set) var beyond: BeyondAnswer? {
        didSet { if beyond != oldValue { changes &+= 1 } }
    }
    /// How many times what the diagnosis shows (the next hop and the two answers) changed: a caller
    /// that remembers it knows whether to publish without comparing them at every step.
    public private(set) var changes: UInt64 = 0
    private var neighborGeneration: UInt64 = 0
    private var beyondGeneration: UInt64 = 0
    private var neighborRunning = false
    private var beyondRunning = false
    private var lastNeighborCheck: Instant?
    /// Host is silent (suspect or failed) as of the last `hostChanged`.
    private var hostSilent = false
    private var hostAddress: IPAddress?
    private var asleep = false
    /// A probe past the gateway is wanted once the next hop has answered (one per diagnosis).
    private var beyondDue = false
    private var lastDiagnosis: Instant?

    public init() {}

    /// The neighbour check applies to the current route.
    public var neighborApplies: Bool { nextHop?.hasNeighbors == true }

    /// When `timeout` is due: the next recheck.
    public var nextWakeup: Instant? {
        guard !asleep, let nextHop, nextHop.hasNeighbors || hostSilent, !neighborRunning, !beyondRunning else {
            return nil
        }
        if hostSilent { return lastDiagnosis.map { $0 &+ Self.brokenRecheck } }
        return lastNeighborCheck.map { $0 &+ Self.healthyRecheck }
    }

    /// The route's next hop (nil: on-link or no usable route). A new one is asked at once.
    public mutating func routeChanged(_ hop: NextHop?, now: Instant) -> [Action] {
        guard hop != nextHop else { return [] }
        let sameGateway = hop?.gateway == nextHop?.gateway && hop?.interfaceIndex == nextHop?.interfaceIndex
        nextHop = hop
        if sameGateway, hop != nil { return [] }
        forget()
        return diagnose(now: now)
    }

    /// Whether Host answers (false: a probe failed — a suspicion — or it is down) and at which address.
    public mutating func hostChanged(silent: Bool, address: IPAddress?, now: Instant) -> [Action] {
        let wasSilent = hostSilent
        hostSilent = silent
        if address != hostAddress {
            hostAddress = address
            beyond = nil
            beyondRunning = false
        }
        if !silent {
            // Host answers again: what was found about the last fault is history.
            if wasSilent {
                beyond = nil
                beyondRunning = false
                beyondDue = false
                beyondGeneration &+= 1
            }
            return []
        }
        guard !wasSilent else { return [] }
        beyond = nil
        return diagnose(now: now)
    }

    /// The machine sleeps: nothing is sent until `resumed`.
    public mutating func suspended() {
        asleep = true
        forget()
    }

    /// After a resume the next hop is asked at once, as after a route change.
    public mutating func resumed(now: Instant) -> [Action] {
        asleep = false
        return diagnose(now: now)
    }

    public mutating func neighborAnswered(generation: UInt64, _ answer: NeighborAnswer, now: Instant) -> [Action] {
        guard generation == neighborGeneration, neighborRunning else { return [] }
        neighborRunning = false
        neighbor = answer
        return probeBeyondIfDue()
    }

    public mutating func beyondAnswered(generation: UInt64, _ answer: BeyondAnswer) {
        guard generation == beyondGeneration, beyondRunning else { return }
        beyondRunning = false
        beyond = answer
    }

    public mutating func handleTimeout(now: Instant) -> [Action] {
        guard let due = nextWakeup, due <= now else { return [] }
        return diagnose(now: now, routine: !hostSilent)
    }

    // MARK: Internals

    private mutating func forget() {
        neighbor = nil
        beyond = nil
        beyondDue = false
        neighborRunning = false
        beyondRunning = false
        neighborGeneration &+= 1
        beyondGeneration &+= 1
    }

    /// The neighbour check when it applies, else (Host silent) straight to the probe past the gateway.
    private mutating func diagnose(now: Instant, routine: Bool = false) -> [Action] {
        guard !asleep, let nextHop else { return [] }
        if hostSilent {
            lastDiagnosis = now
            beyondDue = true
        }
        guard nextHop.hasNeighbors else { return probeBeyondIfDue() }
        guard !neighborRunning else { return [] }
        neighborRunning = true
        neighborGeneration &+= 1
        lastNeighborCheck = now
        return [
            .checkNeighbor(
                gateway: nextHop.gateway, interfaceIndex: nextHop.interfaceIndex, source: nextHop.source,
                generation: neighborGeneration, routine: routine)
        ]
    }

    /// One TTL-limited probe per diagnosis, while Host is silent and the next hop is not known dead.
    private mutating func probeBeyondIfDue() -> [Action] {
        guard hostSilent, beyondDue, !asleep, let nextHop, let hostAddress, !beyondRunning,
            neighbor != .unreachable, hostAddress.ipFamily == nextHop.gateway.ipFamily
        else { return [] }
        beyondDue = false
        beyondRunning = true
        beyondGeneration &+= 1
        return [
            .probeBeyond(
                host: hostAddress, gateway: nextHop.gateway, hops: Self.beyondHops, generation: beyondGeneration)
        ]
    }
}
