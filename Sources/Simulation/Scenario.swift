import Glibc
import MonitorRules
import NetAddress
import ProbeRules
import Timekeeping

/// One simulated run: settings, how the far host behaves over time, and the faults
/// and callers that hit the service. Everything comes from one seed.
public struct Scenario: Sendable {
    /// How the far host (and the path to it) treats probes from some moment on.
    public enum HostBehaviour: Equatable, Sendable {
        /// Replies after `minRTT`…`maxRTT` ms (later than Timeout is late); `loss` of them lost; some duplicated.
        case answering(minRTT: UInt32, maxRTT: UInt32, loss: Double)
        case silent
        /// A router answers every probe with Time Exceeded.
        case timeExceeded
        /// A router answers with Destination Unreachable, quoting the whole probe or only its header.
        case unreachable(wholeQuote: Bool)
        /// ICMP is filtered on the path; a TCP connection to the host goes as `tcp` says, after `rtt` ms.
        case icmpFiltered(rtt: UInt32, tcp: TCPPath = .accepts)
    }

    /// What becomes of a TCP connection to Host's port 443 while ICMP is filtered.
    public enum TCPPath: Equatable, Sendable, CaseIterable {
        /// SYN-ACK.
        case accepts
        /// The host's RST: nothing listens, but the host answered.
        case resets
        /// A router (a firewall's REJECT) answers with ICMP Port Unreachable: the host said nothing.
        case rejectedByRouter
        /// Dropped on the way.
        case dropped
    }

    /// How the resolver treats lookups of a.test and b.test from some moment on.
    public enum ResolverBehaviour: Equatable, Sendable {
        /// Answers within 30 ms.
        case answering
        /// Answers after `milliseconds`.
        case slow(milliseconds: UInt32)
        /// Fails (NXDOMAIN, SERVFAIL) within 30 ms.
        case failing(String)
        /// Says nothing until glibc's own timeout, 5 to 10 s, then fails.
        case hanging
    }

    /// How the check of CheckURL (lookup, connect, GET) goes from some moment on, as the
    /// driver's CheckRun reports it: never later than its limit, max(5 s, Timeout).
    public enum CheckBehaviour: Equatable, Sendable {
        /// 204 after `milliseconds`.
        case expected(milliseconds: UInt32)
        /// A portal redirects.
        case portal
        /// Refused, a 5xx, a partial answer.
        case failing
        /// Lookup or server never answers: the limit ends it.
        case hanging
        /// A middlebox answers 204 to every plain request (it never saw a nonce); inside TLS it cannot pass.
        case intercepted
        /// Plain HTTP passes, HTTPS is dropped on the way (the secure check times out).
        case httpsBlocked
    }

    /// What the network's captive-portal API (announced on every link, RFC 8910) answers from some moment on.
    public enum APIBehaviour: Equatable, Sendable {
        /// Nothing is announced.
        case none
        case captive
        case open
        /// Something that is not RFC 8908's answer.
        case malformed
        /// Never answers: the fetch's limit ends it.
        case hanging
    }

    /// This machine's own TCP connections from some moment on. Those routed like Host receive while
    /// the path to Host works; when it fails they go on receiving for up to a second (what was in
    /// flight), then only retransmit.
    public enum TrafficBehaviour: Equatable, Sendable {
        case none
        /// Connections to `remotes` different remotes routed like Host.
        case steady(remotes: Int)
        /// As steady, with random loss: some retransmit while data still comes in.
        case lossy(remotes: Int)
        /// As steady, one connection closing every 2 s until none is left.
        case dying(remotes: Int)
        /// Connections to the local network only: none routed like Host.
        case localOnly(connections: Int)
    }

    public enum Fault: Equatable, Sendable {
        case behaviour(HostBehaviour)
        case resolver(ResolverBehaviour)
        case check(CheckBehaviour)
        case api(APIBehaviour)
        case traffic(TrafficBehaviour)
        case linkUp(Int32, Bool)
        case carrier(Int32, Bool)
        case route(Int32, present: Bool)
        /// The interface's routes deleted and added again at once, the routers silent (NetworkManager replacing a
        /// route when a router's preference changes).
        case routeReplaced(Int32)
        /// A dual-stack network: `family`'s default routes withdrawn from every interface (or given back).
        case familyRoutes(IPFamily, present: Bool)
        /// `family`'s packets vanish past this machine (or pass again).
        case blackhole(IPFamily, Bool)
        /// The routers advertise the network's NAT64 prefix for so long (RFC 8781; 0 withdraws it).
        case nat64Prefix(lifetimeSeconds: UInt32)
        /// The reader stalls while `churn` unrelated events arrive: the socket overruns.
        case overrun(churn: Int)
        /// The socket overruns just as the kernel answers the next route lookup: the answer is lost.
        case overrunWhileLookingUp
        /// `count` Checks spread over `spreadMilliseconds`.
        case checks(count: Int, spreadMilliseconds: UInt32)
        /// Target `target`'s Host or settings are Set (0: the default target; a number past the added ones: the last).
        case host(String, target: Int = 0)
        case settings(ProbeSettings, target: Int = 0)
        /// Someone who knows our identifier and sequence, not our token, forges errors and replies.
        case forgeries(count: Int)
        /// The gateway forwards nothing from now on, answering its neighbours (ARP, NDP) or not.
        case gateway(arp: Bool)
        /// The router past the gateway takes nothing in: nothing past the gateway answers.
        case upstreamDies
        /// The machine sleeps so long: logind says so before and after (`announced`), or only CLOCK_BOOTTIME shows it.
        case sleep(milliseconds: UInt32, announced: Bool)
        /// Everything back to normal: links and routes up, the host answering, a resolvable Host,
        /// the resolver and the check answering.
        case heal
    }

    public var seed: UInt64
    public var family: AddressFamily
    public var settings: ProbeSettings
    public var host: String
    /// Virtual milliseconds the run lasts.
    public var duration: UInt64
    public var timeline: [(at: UInt64, fault: Fault)]
    /// From here on nothing is wrong: the final verdict must be connected.
    public var quietFrom: UInt64?
    /// Whether CheckURL is set (to http://check.test/generate_204).
    public var checkURL = false
    /// Whether SecureCheckURL is set (to https://check.test/generate_204), and CheckEcho.
    public var secureCheck = false
    public var checkEcho = false
    /// How often the name is looked up again while its address answers, milliseconds.
    public var dnsRefreshMilliseconds: UInt64 = 300_000
    /// How the transport probes: ICMP echo (with the TCP ladder beside it), or TCP connections
    /// alone where ICMP sockets are not permitted.
    public var probeMethod: ProbeMethod = .icmpDatagram
    /// The Hosts of targets added beside the default one (restored, so started before it): they
    /// share its resolver and reachability core.
    public var extraTargets: [String] = []
    /// On a dual-stack network (`family` any), the families as the resolver lists Host's addresses.
    public var resolverOrder: [IPFamily] = [.v6, .v4]
    /// ModemManager and NetworkManager on the system bus: whether they are, and when their first view is complete.
    public var services: Services = .absent

    /// ModemManager and NetworkManager as the service meets them at start: the first verdicts wait for their first
    /// view, at most `ServiceCore.servicesWait`.
    public enum Services: Equatable, Sendable {
        /// Not on the bus: nothing waits.
        case absent
        /// Their first view is complete so long after start (0: at once).
        case readyAfter(milliseconds: UInt64)
        /// Their first view never completes: the wait's limit ends it.
        case neverReady
    }

    public init(
        seed: UInt64, family: AddressFamily = .ipv4, settings: ProbeSettings, host: String = "a.test",
        duration: UInt64, timeline: [(at: UInt64, fault: Fault)], quietFrom: UInt64? = nil
    ) {
        self.seed = seed
        self.family = family
        self.settings = settings
        self.host = host
        self.duration = duration
        self.timeline = timeline
        self.quietFrom = quietFrom
    }

    /// A dual-stack network (Host a.test has an address in each family, listed in `order`) whose families fail
    /// and come back as `timeline` says, with nothing else wrong: INTERFACE.md "Every path" on a schedule.
    public static func dualStack(
        seed: UInt64, settings: ProbeSettings, order: [IPFamily] = [.v6, .v4], seconds: UInt64,
        timeline: [(at: UInt64, fault: Fault)] = []
    ) -> Scenario {
        var scenario = Scenario(
            seed: seed, family: .any, settings: settings, duration: seconds * 1000,
            timeline: timeline.sorted { $0.at < $1.at })
        scenario.resolverOrder = order
        return scenario
    }

    /// A random scenario: random settings, a run of random faults, then healing and quiet. Each part is drawn
    /// from a stream of its own (`ScenarioStreams`), so a part added later is a new stream: every other part of
    /// a seed stays what it was.
    public static func random(seed: UInt64) -> Scenario {
        let streams = ScenarioStreams(seed: seed)
        var draw = streams["settings"]
        var settings = ProbeSettings(
            intervalMilliseconds: draw.pick([100, 200, 500, 1000, 2000]),
            timeoutMilliseconds: draw.pick([100, 200, 500, 1000, 2000]),
            failureThreshold: UInt32(draw.between(1, 5)), recoveryThreshold: UInt32(draw.between(1, 4)),
            evidence: draw.pick([.probes, .traffic]))
        // A third of the scenarios probe `adaptive` (INTERFACE.md "Quiet by default"); the others `steady`.
        var probing = streams["probing"]
        if probing.next() % 3 == 0 {
            settings.probing = .adaptive
            settings.idleIntervalMilliseconds = probing.pick([1000, 2000, 5000, 60_000])
        }
        let family: AddressFamily = draw.next() % 4 == 0 ? .ipv6 : .ipv4
        let faultTime = draw.between(2_000, 15_000)
        var timeline: [(at: UInt64, fault: Fault)] = []
        var faults = streams["faults"]
        for _ in 0..<faults.between(2, 14) {
            timeline.append((faults.between(0, faultTime), faults.fault(family: family)))
        }
        var portal = streams["portal truth"]
        for _ in 0..<portal.between(0, 3) {
            let at = portal.between(0, faultTime)
            let fault: Fault =
                portal.next() % 2 == 0
                ? .api(portal.pick([.captive, .open, .malformed, .hanging, .none]))
                : .check(portal.pick([.intercepted, .httpsBlocked]))
            timeline.append((at, fault))
        }
        var broke = streams["where it broke"]
        var lastWake: UInt64 = 0
        for _ in 0..<broke.between(0, 2) {
            let at = broke.between(0, faultTime)
            let fault: Fault
            switch broke.next() % 4 {
            case 0: fault = .gateway(arp: broke.next() % 2 == 0)
            case 1: fault = .upstreamDies
            default:
                let milliseconds = UInt32(broke.between(200, 3_000))
                fault = .sleep(milliseconds: milliseconds, announced: broke.next() % 3 != 0)
                lastWake = max(lastWake, at + UInt64(milliseconds))
            }
            timeline.append((at, fault))
        }
        timeline.sort { $0.at < $1.at }
        let healAt = max(faultTime, lastWake) + 1
        timeline.append((healAt, .heal))
        // Long enough for the slowest settings in the run to recover: RecoveryThreshold answers at the interval.
        var slowest = settings
        for case (_, .settings(let other, _)) in timeline {
            slowest.intervalMilliseconds = max(slowest.intervalMilliseconds, other.intervalMilliseconds)
            slowest.timeoutMilliseconds = max(slowest.timeoutMilliseconds, other.timeoutMilliseconds)
            slowest.recoveryThreshold = max(slowest.recoveryThreshold, other.recoveryThreshold)
        }
        let recovery =
            UInt64(slowest.recoveryThreshold + 2) * UInt64(slowest.intervalMilliseconds + slowest.timeoutMilliseconds)
        var quiet = healAt + recovery + 500
        var shape = streams["shape"]
        var scenario = Scenario(
            seed: seed, family: family, settings: settings, host: shape.pick(["a.test", "b.test"]),
            duration: quiet + 500, timeline: timeline, quietFrom: quiet)
        scenario.checkURL = shape.next() % 2 == 0
        scenario.dnsRefreshMilliseconds = shape.pick([1_000, 3_000, 300_000])
        if shape.next() % 6 == 0 { scenario.probeMethod = .tcp }
        scenario.secureCheck = shape.next() % 3 == 0
        scenario.checkEcho = shape.next() % 2 == 0
        var targets = streams["targets"]
        if targets.next() % 4 == 0 {
            scenario.extraTargets = (0..<targets.between(1, 6)).map { _ in
                targets.pick(["a.test", "b.test", "hang.test", "fail.test"])
            }
            // Host and settings are Set on any target.
            let count = UInt64(scenario.extraTargets.count + 1)
            for index in scenario.timeline.indices {
                switch scenario.timeline[index].fault {
                case .host(let name, _):
                    scenario.timeline[index].fault = .host(name, target: Int(targets.next() % count))
                case .settings(let settings, _):
                    scenario.timeline[index].fault = .settings(settings, target: Int(targets.next() % count))
                default: break
                }
            }
        }
        var dual = streams["dual stack"]
        if dual.next() % 3 == 0 {
            scenario.family = .any
            scenario.resolverOrder = dual.next() % 2 == 0 ? [.v6, .v4] : [.v4, .v6]
            for _ in 0..<dual.between(1, 6) {
                let family: IPFamily = dual.next() % 2 == 0 ? .v4 : .v6
                let fault: Fault =
                    switch dual.next() % 3 {
                    case 0: .familyRoutes(family, present: dual.next() % 2 == 0)
                    case 1: .blackhole(family, dual.next() % 2 == 0)
                    default: .nat64Prefix(lifetimeSeconds: dual.pick([0, 16, 40, 1800]))
                    }
                scenario.timeline.append((dual.between(0, faultTime), fault))
            }
            scenario.timeline.sort { $0.at < $1.at }
        }
        var services = streams["services"]
        scenario.services =
            switch services.next() % 4 {
            case 0: .absent
            case 1: .neverReady
            default: .readyAfter(milliseconds: services.between(0, 1_500))
            }
        // A lookup hung before healing fails up to 10 s later and is retried 5 s after that; a check
        // that failed is retried after 10 s and may take its whole limit.
        let settled = healAt + 16_000 + UInt64(slowest.timeoutMilliseconds)
        let slowToSettle = timeline.contains { entry in
            switch entry.fault {
            // A lookup of hang.test holds the resolver's one thread up to 10 s: a.test waits behind it.
            case .resolver(.failing), .resolver(.hanging), .host("hang.test", _): true
            case .check(.portal), .check(.failing), .check(.hanging), .check(.intercepted), .check(.httpsBlocked):
                scenario.checkURL || scenario.secureCheck
            default: false
            }
        }
        // A slow lookup asked before healing answers up to 4 s later.
        if timeline.contains(where: { if case .resolver(.slow) = $0.fault { true } else { false } }) {
            quiet = max(quiet, healAt + 4_100 + recovery + 500)
            scenario.quietFrom = quiet
            scenario.duration = quiet + 500
        }
        if quiet < settled && slowToSettle {
            quiet = settled
            scenario.quietFrom = quiet
            scenario.duration = quiet + 500
        }
        // The default target's lookups may wait behind another target's that hangs (up to 10 s).
        if scenario.extraTargets.contains("hang.test") {
            quiet = max(quiet, settled) + 10_100
            scenario.quietFrom = quiet
            scenario.duration = quiet + 500
        }
        return scenario
    }
}

/// A scenario's random streams, one per part, each from the seed and the part's name.
struct ScenarioStreams {
    let seed: UInt64

    subscript(name: StaticString) -> SeededRandom {
        // FNV-1a of the name: a stream's start depends on nothing but the seed and its own name.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        name.withUTF8Buffer { bytes in
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        }
        return SeededRandom(seed: seed ^ hash)
    }
}

extension SeededRandom {
    mutating func pick<T>(_ values: [T]) -> T { values[Int(next() % UInt64(values.count))] }
    mutating func between(_ low: UInt64, _ high: UInt64) -> UInt64 { low + next() % (high - low + 1) }

    /// One of the faults every scenario draws from (`family`: the default target's, for a literal Host).
    mutating func fault(family: AddressFamily) -> Scenario.Fault {
        let index = Int32(between(2, 3))
        return switch next() % 16 {
        case 0:
            .behaviour(
                .answering(
                    minRTT: UInt32(between(1, 50)), maxRTT: UInt32(between(50, 2500)),
                    loss: Double(next() % 100) / 100))
        case 1: .behaviour(.silent)
        case 2:
            .behaviour(
                pick([
                    .timeExceeded, .unreachable(wholeQuote: true), .unreachable(wholeQuote: false),
                    .icmpFiltered(rtt: UInt32(between(1, 50)), tcp: pick(Scenario.TCPPath.allCases)),
                ]))
        case 3: .linkUp(index, next() % 2 == 0)
        case 4: .carrier(index, next() % 2 == 0)
        case 5:
            // Present, gone, or replaced as a manager replaces it (issue 54).
            switch next() % 3 {
            case 0: .route(index, present: true)
            case 1: .route(index, present: false)
            default: .routeReplaced(index)
            }
        case 6: next() % 2 == 0 ? .overrun(churn: Int(between(0, 40))) : .overrunWhileLookingUp
        case 7: .checks(count: Int(between(1, 3000)), spreadMilliseconds: UInt32(between(0, 3000)))
        case 8: .host(pick(["a.test", "b.test", "hang.test", "fail.test", family == .ipv6 ? "fd00::2" : "198.18.0.2"]))
        case 9:
            .settings(
                ProbeSettings(
                    intervalMilliseconds: pick([100, 500, 1000]), timeoutMilliseconds: pick([100, 500, 1000]),
                    failureThreshold: UInt32(between(1, 5)), recoveryThreshold: UInt32(between(1, 4)),
                    evidence: pick([.probes, .traffic])))
        case 10: .forgeries(count: Int(between(1, 200)))
        case 11:
            .resolver(
                pick([
                    .answering, .slow(milliseconds: UInt32(between(100, 4000))), .failing("SERVFAIL"),
                    .failing("Name or service not known"), .hanging,
                ]))
        case 12: .check(pick([.expected(milliseconds: UInt32(between(1, 300))), .portal, .failing, .hanging]))
        case 13, 14:
            .traffic(
                pick([
                    .none, .steady(remotes: Int(between(1, 5))), .lossy(remotes: Int(between(2, 5))),
                    .dying(remotes: Int(between(1, 4))), .localOnly(connections: Int(between(1, 20))),
                ]))
        default: .behaviour(.answering(minRTT: 1, maxRTT: 20, loss: 0))
        }
    }
}
