import Glibc
import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import Timekeeping

/// Drives the daemon's own `TargetCore` (the monitor and probe cores composed once) and the
/// reachability core on a virtual clock, against a simulated kernel, far host and
/// resolver, and checks INTERFACE.md's rules after every step. Deterministic: one
/// seed reproduces a run.
public final class Simulation {
    public struct Violation: Error, CustomStringConvertible, Sendable {
        public let seed: UInt64
        public let at: Instant
        public let rule: String
        public var description: String {
            "seed \(seed), at \(Double(at.nanoseconds) / 1e9) s: \(rule)"
        }
    }

    public struct Summary: Sendable {
        public var probesSent = 0
        public var checks = 0
        public var flips = 0
        public var overruns = 0
        public var events = 0
        public var forcedProbes = 0
        /// Traffic samples taken, probes skipped for flowing traffic, stalls the core heard of.
        public var trafficSamples = 0
        public var probesSkipped = 0
        public var stalls = 0
        /// Neighbour checks that went on the wire.
        public var neighborChecks = 0
        /// The sleeps nobody announced that the service's core found, each when and how long.
        public var sleepsFound: [(at: Instant, slept: Duration)] = []
        /// The longest any Check waited for its verdict.
        public var longestCheckWait = Duration.zero
        /// Every Status the monitor published, with when.
        public var statuses: [(at: Instant, status: Status, reason: String)] = []
        public var finalStatus: Status = .unknown
    }

    enum Event {
        /// Events about target `target`'s probes, check and samples.
        case reply(target: Int, IPFamily, sequence: UInt16, token: UInt64, via: AnswerPath)
        /// A TCP probe's connection ended so; `fromHost`: the host itself spoke (else a router, or nobody).
        case tcpOutcome(
            target: Int, IPFamily, sequence: UInt16, token: UInt64, TCPOutcome, alone: Bool, fromHost: Bool)
        case icmpError(target: Int, IPFamily, sequence: UInt16, token: UInt64?, EchoPacket.Failure)
        case kernelReadable
        /// A lookup for target `target` ended; `worker`: the resolver's thread ran it (an address is
        /// answered at once, without it), and is free again.
        case resolverAnswer(target: Int, generation: UInt64, Result<[IPAddress], ResolverFailure>, worker: Bool)
        case checkAnswer(target: Int, IPFamily, generation: UInt64, CheckAnswer.Meaning)
        /// The captive-portal API's answer to fetch `generation` on `link` (`interface`).
        case capportAnswer(
            link: LinkID, interface: String, generation: UInt64, Result<CapportAnswer, StrictJSON.Malformed>)
        /// The service core's housekeeping tick.
        case serviceTick
        case trafficSample(
            target: Int, IPFamily, generation: UInt64, TrafficSample, cost: Duration, takenAt: Instant)
        /// Check `number` of `link`'s next hop `gateway` ended so.
        case neighborAnswer(link: LinkID, gateway: IPAddress, number: UInt64, NeighborAnswer)
        /// Target `target`'s probe past the gateway ended so.
        case beyondAnswer(target: Int, family: IPFamily, generation: UInt64, BeyondAnswer)
        /// An announced sleep ends.
        case wake
        /// ModemManager's and NetworkManager's first view is complete: what they say comes with it.
        case servicesReady
        case fault(Scenario.Fault)
    }

    let scenario: Scenario
    var random: SeededRandom
    var now = Instant.origin
    var queue = EventQueue<Event>()
    /// Arrival times of Checks still to come, latest first (floods are thousands; the queue stays small).
    var checkArrivals: [Instant] = []
    var kernel: SimulatedKernel
    /// Every target, by number: the default one (0, its Host the scenario's) and those added beside it
    /// (restored, so started before it), each a `TargetCore` in the daemon's driver with the whole world.
    var targets: [SimulatedTarget] = []
    var first: SimulatedTarget { targets[0] }
    /// The families the network has (both on a dual-stack one), in the order the resolver lists them.
    let families: [IPFamily]
    /// Every target's path, by its watch on the reachability core.
    var pathsByRouteID: [SimulatedPath?] = []
    /// Every watch on the reachability core: each target's paths', and the fixed one.
    var watches: [ReachabilityCore.TargetID] = []
    /// Faults applied so far.
    var faultsApplied = 0
    var reach: ReachabilityCore
    public internal(set) var summary = Summary()
    var behaviour: Scenario.HostBehaviour = .answering(minRTT: 1, maxRTT: 20, loss: 0)
    /// Since when the resolver answers again.
    var resolverAnsweringSince: Instant? = .origin
    var resolver = SimulatedResolver()
    var checkBehaviour: Scenario.CheckBehaviour = .expected(milliseconds: 20)
    /// The network's captive-portal API.
    var apiBehaviour: Scenario.APIBehaviour = .none
    /// The daemon's service core in its driver (portal APIs, link facts, sleeps), this simulation its world.
    lazy var service = SimulatedService(simulation: self)
    /// Each interface's last API answer taken, and whether a captive one came from the captive API.
    var apiAnswers: [String: Bool] = [:]
    static let apiPortalURL = "https://portal.test/api-login"
    /// The next hop, the path past it and the sleeps (see `GatewayWorld`).
    var gateway = GatewayWorld()
    var trafficBehaviour: Scenario.TrafficBehaviour = .none
    var trafficSince = Instant.origin
    static let checkURL = "http://check.test/generate_204"
    static let secureCheckURL = "https://check.test/generate_204"
    var kernelReadScheduled = false
    var overflowOnNextLookup = false
    /// Every (usable, interface) the kernel's truth took for each of the reachability core's targets
    /// (a target's since its address last changed).
    var truthsSinceRetarget: [ReachabilityCore.TargetID: Set<String>] = [:]
    /// A watch on the same core with a fixed address and no target behind it: lookups for two
    /// watches share every overrun and dump.
    var fixedWatch: ReachabilityCore.TargetID = 0
    var evaluationDue = false
    /// Some target has reports or a publication to check (most steps, the Checks of a flood, have none).
    var targetsWithNews = false
    var quiet = false
    /// Something the reachability core sees changed since its agreement with the kernel was last checked.
    var routeNewsSinceCheck = true
    public internal(set) var violations: [Violation] = []
    /// Told every step, when set: for reading a failing seed's run.
    public var trace: ((String) -> Void)?
    /// Whether each path's Connectivity found without text is checked against its state after every step
    /// (a whole state computed per target per step: it halves the speed, so a test asks for it on some runs).
    public var checksTextlessConnectivity = false

    func log(_ text: @autoclosure () -> String) {
        trace?("\(Double(now.sinceOrigin.microseconds) / 1000) ms  \(text())")
    }

    public init(_ scenario: Scenario) {
        self.scenario = scenario
        random = SeededRandom(seed: scenario.seed ^ 0x5EED)
        families =
            switch scenario.family {
            case .ipv4: [.v4]
            case .ipv6: [.v6]
            case .any: scenario.resolverOrder
            }
        kernel = SimulatedKernel(families: families)
        reach = ReachabilityCore { link in link.name.hasPrefix("wlan") ? .wifi : .ethernet }
        for (at, fault) in scenario.timeline { queue.add(.fault(fault), at: .origin + .milliseconds(at)) }
    }

    /// Runs the scenario to its end; returns the violations found (none when every rule held).
    @discardableResult
    public func run() -> [Violation] {
        // Every target is made alike; they share the sequence space, each in its own slot.
        let hosts = [scenario.host] + scenario.extraTargets
        let stride = UInt16(hosts.count)
        for (index, host) in hosts.enumerated() {
            var slots: [IPFamily: UInt16] = [:]
            var routeIDs: [IPFamily: ReachabilityCore.TargetID] = [:]
            for family in families {
                slots[family] = UInt16(index)
                routeIDs[family] = reach.addTarget(families: [family])
            }
            let core = TargetCore(
                host: host, family: scenario.family, probeSettings: scenario.settings,
                seed: scenario.seed &+ UInt64(index), slots: slots, stride: stride,
                refresh: .milliseconds(scenario.dnsRefreshMilliseconds))
            // The default target's lookups go first, as the daemon's.
            let target = SimulatedTarget(
                simulation: self, index: index, core: core, settings: scenario.settings,
                routeIDs: routeIDs, lookupsFirst: index == 0)
            for path in target.paths {
                // The core numbers its watches from 0, in the order they were added.
                while pathsByRouteID.count <= path.routeID { pathsByRouteID.append(nil) }
                pathsByRouteID[path.routeID] = path
            }
            target.history.observeStart(boot: BootTime(sinceBoot: .zero))
            target.driver.observeStep = { [unowned self, unowned target] actions in
                if trace != nil { for action in actions { target.log("target: \(action)") } }
                if let broken = TargetCore.outputContractBroken(actions) { violation(broken) }
            }
            targets.append(target)
            service.driver.adopt(target.driver, number: index)
            service.handle(.targetTimeout(target: index, .milliseconds(scenario.settings.timeoutMilliseconds)))
        }
        fixedWatch = reach.addTarget(families: IPFamily.allCases)
        watches = targets.flatMap { $0.paths.map(\.routeID) } + [fixedWatch]
        reach.setTarget(families[0] == .v6 ? Self.v6(0, 9) : .v4([198, 18, 0, 9]), for: fixedWatch)
        for target in targets {
            for path in target.paths { noteKernelTruth(resetting: path.routeID) }
        }
        reach.start()
        switch scenario.services {
        case .absent:
            break
        case .readyAfter(let milliseconds):
            service.handle(.servicesFollowed(ready: false))
            queue.add(.servicesReady, at: now + .milliseconds(milliseconds))
        case .neverReady:
            service.handle(.servicesFollowed(ready: false))
        }
        queue.add(.serviceTick, at: now + ServiceCore.tick)
        // The added targets were restored: they start before the default one.
        for target in targets.dropFirst() { target.take(.start(checkURL: startCheckURL)) }
        pump()
        first.take(.start(checkURL: startCheckURL))
        pump()
        let end = Instant.origin + .milliseconds(scenario.duration)
        let targets = self.targets // fixed from here on
        while violations.isEmpty {
            let reachWake = askReach { $0.nextWakeup }
            var next = queue.nextTime ?? end
            if let check = checkArrivals.last, check < next { next = check }
            // The one wake-up of the service and every target, as the daemon's (it goes before a queued event at
            // the same moment).
            let serviceWake = service.driver.nextWakeup
            var due = false
            if let wake = serviceWake, wake <= next {
                next = wake
                due = true
            }
            if let wake = reachWake, wake < next {
                next = wake
                due = false
            }
            guard next <= end else { break }
            now = max(now, next)
            if due, let wake = serviceWake, wake <= now {
                service.driver.wake()
            } else if let wake = reachWake, wake <= now {
                routeNewsSinceCheck = true
                reach.handleTimeout(now: now)
            } else if let arrival = checkArrivals.last, arrival <= now, arrival < queue.nextTime ?? .distantFuture {
                checkArrivals.removeLast()
                pick(targets).check()
            } else if let first = queue.nextTime, first <= now, let (_, event) = queue.removeFirst() {
                handle(event)
            } else {
                break // nothing left before the end
            }
            summary.events += 1
            pump()
            endOfTurn()
            checkKernelAgreement()
            for target in targets { target.checkStep(textless: checksTextlessConnectivity) }
            if let since = service.firstVerdictsHeldSince, now - since > ServiceCore.servicesWait {
                violation("the first verdicts still wait for the services after \(now - since)")
            }
            if let by = resolver.firstMustStartBy, now > by {
                violation(
                    "a lookup that goes first still waits \(now - by) after the lookup under way when it was asked ended"
                )
            }
        }
        now = end
        for target in targets {
            target.finish()
            target.headline.end(now: now)
        }
        summary.statuses = first.statuses
        summary.finalStatus = first.state.status
        return violations
    }

    /// The check URL every target starts with.
    var startCheckURL: String { scenario.checkURL ? Self.checkURL : scenario.secureCheck ? Self.secureCheckURL : "" }

    /// The default target's state, as last published.
    public var state: MonitorState { first.state }

    /// The added targets' states, as last published.
    public var extraStates: [MonitorState] { targets.dropFirst().map(\.state) }

    /// What `question` says of the reachability core, asked in place: a method called on a stored
    /// struct runs on a copy.
    func askReach<Answer>(_ question: (ReachabilityCore) -> Answer) -> Answer { Self.ask(&reach, question) }

    private static func ask<Answer>(_ core: inout ReachabilityCore, _ question: (ReachabilityCore) -> Answer) -> Answer
    {
        question(core)
    }

    func handle(_ event: Event) {
        log("\(event)")
        switch event {
        case .reply(let index, let family, let sequence, let token, let via):
            targets[index].path(family)?.deliverReply(sequence, token, via, fromHost: true)
        case .tcpOutcome(let index, let family, let sequence, let token, let outcome, let alone, let fromHost):
            targets[index].path(family)?.ended(sequence, token, outcome, alone: alone, fromHost: fromHost)
        case .icmpError(let index, let family, let sequence, let token, let failure):
            targets[index].path(family)?.deliverError(sequence, token, failure)
        case .kernelReadable:
            routeNewsSinceCheck = true
            kernelReadScheduled = false
            for _ in 0..<64 {
                switch kernel.read() {
                case .overrun:
                    summary.overruns += 1
                    reach.overrun()
                case .datagram(let messages):
                    reach.receive(messages, malformed: 0, now: now)
                case nil:
                    break
                }
                if !kernel.hasQueued { break }
            }
            if kernel.hasQueued { scheduleKernelRead() }
        case .trafficSample(let index, let family, let generation, let sample, let cost, let takenAt):
            guard let path = targets[index].path(family) else { return }
            if generation == path.path.trafficWatch.generation {
                path.newSample = (takenAt, sample.receivingRemotes > 0)
            }
            path.take(.trafficSampled(generation: generation, sample, cost: cost))
        case .checkAnswer(let index, let family, let generation, let meaning):
            // A cancelled check says nothing more, as CheckRun.cancel makes sure.
            guard let path = targets[index].path(family), path.runningCheck?.generation == generation else { return }
            path.runningCheck = nil
            path.heldCheckFaked = path.runningCheckFaked
            path.take(.checkAnswered(generation: generation, meaning))
        case .capportAnswer(let link, let interface, let generation, let result):
            // What the follower takes (a cancelled fetch's answer it does not).
            if service.driver.ask({ $0.isFetching(link: link, generation: generation) }) {
                if case .success(let answer) = result {
                    apiAnswers[interface] = answer.captive
                } else {
                    apiAnswers[interface] = nil
                }
            }
            service.handle(.portalAPIFetched(link: link, generation: generation, result))
        case .serviceTick:
            queue.add(.serviceTick, at: now + ServiceCore.tick)
            service.handle(.tick)
        case .resolverAnswer(let index, let generation, let result, let worker):
            if worker { resolver.finished() }
            let target = targets[index]
            if generation == target.driver.core.generation {
                target.lookupAskedAt = nil
                if case .failure = result { target.lastLookupFailureAt = now }
            }
            target.take(.resolved(generation: generation, result, routedFamilies: routedFamilies))
            startNextLookup()
        case .neighborAnswer(let link, let gateway, let number, let answer):
            service.neighborChecked(link: link, gateway: gateway, number: number, answer)
        case .beyondAnswer(let index, let family, let generation, let answer):
            targets[index].take(.path(family, .beyondAnswered(generation: generation, answer)))
        case .wake:
            wake()
        case .servicesReady:
            service.servicesReady()
        case .fault(let fault):
            apply(fault)
        }
    }

    var routedFamilies: IPFamilies { reach.table.routedFamilies }

    func apply(_ fault: Scenario.Fault) {
        faultsApplied += 1
        applyGatewayFault(fault)
        switch fault {
        case .gateway, .upstreamDies, .sleep:
            break
        case .behaviour(let new):
            behaviour = new
            // The ladder must find a host that answers TCP.
            for target in targets {
                for path in target.paths {
                    if case .icmpFiltered(_, let tcp) = new, tcp == .accepts || tcp == .resets {
                        if path.filteredSince == nil { path.filteredSince = now }
                    } else {
                        path.filteredSince = nil
                        path.pathTroubleSinceFiltered = false
                    }
                }
            }
        case .resolver(let new):
            resolver.behaviour = new
            resolverAnsweringSince = new == .answering ? resolverAnsweringSince ?? now : nil
        case .check(let new):
            checkBehaviour = new
            // A check already under way meets the new network part way: its answer proves nothing either way.
            for target in targets {
                for path in target.paths { path.runningCheckFaked = false }
            }
        case .api(let new):
            apiBehaviour = new
            service.announceAPI()
        case .traffic(let new):
            trafficBehaviour = new
            trafficSince = now
        case .linkUp(let index, let up):
            kernel.setAdministrativelyUp(index, up, now: now)
        case .carrier(let index, let on):
            kernel.setCarrier(index, on)
        case .route(let index, let present):
            kernel.setRoute(index, present: present, now: now)
        case .routeReplaced(let index):
            // The moment between the two is a truth the route core may see.
            if kernel.replaceRoutes(index, replacing: true) {
                noteKernelTruth()
                _ = kernel.replaceRoutes(index, replacing: false)
            }
        case .familyRoutes(let family, let present):
            kernel.setFamilyRoutes(family, present: present, now: now)
        case .blackhole(let family, let on):
            if on { kernel.blackholed.insert(family) } else { kernel.blackholed.remove(family) }
        case .nat64Prefix(let lifetime):
            kernel.advertiseNat64(lifetimeSeconds: lifetime, now: now)
        case .overrunWhileLookingUp:
            overflowOnNextLookup = true
        case .overrun(let churn):
            for n in 0..<churn { kernel.churn(UInt8(truncatingIfNeeded: n)) }
            kernel.overflow()
        case .checks(let count, let spread):
            // Arrivals in order, at random gaps averaging spread / count.
            var arrivals: [Instant] = []
            arrivals.reserveCapacity(count)
            let meanGap = Duration.milliseconds(spread) / UInt64(max(count, 1))
            var at = now
            for _ in 0..<count {
                at += .nanoseconds(random.next() % (2 * meanGap.nanoseconds + 1))
                arrivals.append(at)
            }
            checkArrivals = (checkArrivals + arrivals).sorted(by: >)
        // Host and the settings are set on the default target's object.
        case .host(let name, let index):
            targets[min(index, targets.count - 1)].take(.targetChanged(host: name, family: scenario.family))
        case .settings(let new, let index):
            let target = targets[min(index, targets.count - 1)]
            target.lastSettingsChange = now
            target.settings = new
            service.handle(.targetTimeout(target: target.index, .milliseconds(new.timeoutMilliseconds)))
            target.take(.probeSettings(new))
        case .forgeries where scenario.probeMethod == .tcp:
            break // without an ICMP socket there is nothing to forge into
        case .forgeries(let count):
            pick(pick(targets).paths).forge(count)
        case .heal:
            quiet = true
            behaviour = .answering(minRTT: 1, maxRTT: 20, loss: 0)
            resolver.behaviour = .answering
            resolverAnsweringSince = resolverAnsweringSince ?? now
            checkBehaviour = .expected(milliseconds: 20)
            apiBehaviour = .none
            service.announceAPI()
            for target in targets {
                for path in target.paths {
                    path.runningCheckFaked = false
                    path.filteredSince = nil
                    path.pathTroubleSinceFiltered = false
                }
            }
            kernel.heal(now: now)
            for index: Int32 in [2, 3] {
                kernel.setAdministrativelyUp(index, true, now: now)
                kernel.setCarrier(index, true)
                kernel.setRoute(index, present: true, now: now)
            }
            // A Host Set to one that hangs or fails is Set back: the default target's to a.test, another's to its own.
            for target in targets {
                guard let host = target.paths.first?.path.monitor.host else { continue }
                let own = target.index == 0 ? "a.test" : scenario.extraTargets[target.index - 1]
                if host != own, host == "hang.test" || host == "fail.test" {
                    target.take(.targetChanged(host: own, family: scenario.family))
                }
            }
        }
        switch fault {
        case .linkUp, .carrier, .route, .routeReplaced, .familyRoutes, .heal: noteKernelTruth()
        default: break
        }
        for target in targets { target.notePath() }
        scheduleKernelRead()
    }

    static let malformedAnswers = [
        #"{"captive": true}"#, #"{"captive": true, "user-portal-url": "http://portal.test/"}"#,
        #"{"captive": "yes", "user-portal-url": "https://portal.test/"}"#, "<html>",
        #"{"captive": true, "captive": false, "user-portal-url": "https://portal.test/"}"#,
    ]

    func pick<T>(_ values: [T]) -> T { random.pick(values) }

    func pump() {
        var busy = true
        while busy {
            busy = false
            if targetsWithNews {
                for target in targets where !target.reported.isEmpty {
                    busy = true
                    target.takeReports()
                }
            }
            for output in reach.takeOutputs() {
                busy = true
                carryOut(output)
            }
        }
        guard targetsWithNews else { return }
        // While the first verdicts wait for the services, what is published is what came before them: nothing to
        // hold against the world yet (the wait has rules of its own: `SimulatedService.holdFirstVerdicts`).
        guard service.firstVerdictsHeldSince == nil else { return }
        targetsWithNews = false
        for target in targets where target.stateDue {
            target.stateDue = false
            for path in target.paths {
                path.checkResolution()
                path.checkBeyondTheHost()
            }
            target.checkBeyondTheHost()
            target.checkWhereItBroke()
            target.checkHeadline()
            target.checkLinkFacts()
        }
    }

    func endOfTurn() {
        while evaluationDue {
            evaluationDue = false
            reach.evaluate()
            pump()
        }
    }
}

/// What the world hands one target: Checks, and what its driver reported.
extension SimulatedTarget {
    func check() {
        simulation.summary.checks += 1
        // Pending before the probe goes out, as MonitorObject keeps it: a probe that fails at once answers it.
        let pending = (arrival: now, limit: now + 2 * settings.timeout)
        if driver.check() == true { pendingChecks.append(pending) }
    }

    /// What the driver reported during the step, in order.
    func takeReports() {
        // The batch is handed back emptied, so the next step's reports reuse its storage.
        var batch: [Reported] = []
        swap(&batch, &reported)
        defer {
            batch.removeAll(keepingCapacity: true)
            if reported.isEmpty { swap(&batch, &reported) }
        }
        for news in batch {
            switch news {
            case .reportChanged(let family, let old, let new):
                log("report \(family) \(String(describing: new.answering)) \(new.reason)")
                path(family)?.checkFlip(from: old, to: new)
            case .verdictReady:
                answerChecks()
            }
        }
    }
}
