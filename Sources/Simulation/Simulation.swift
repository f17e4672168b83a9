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
        case reply(target: Int, sequence: UInt16, token: UInt64, via: AnswerPath)
        /// A TCP probe's connection ended so; `fromHost`: the host itself spoke (else a router, or nobody).
        case tcpOutcome(target: Int, sequence: UInt16, token: UInt64, TCPOutcome, alone: Bool, fromHost: Bool)
        case icmpError(target: Int, sequence: UInt16, token: UInt64?, EchoPacket.Failure)
        case kernelReadable
        /// A lookup for target `target` ended; `worker`: the resolver's thread ran it (an address is
        /// answered at once, without it), and is free again.
        case resolverAnswer(target: Int, generation: UInt64, Result<[IPAddress], ResolverFailure>, worker: Bool)
        case checkAnswer(target: Int, generation: UInt64, CheckAnswer.Meaning)
        /// The captive-portal API's answer to fetch `generation` on `interface`.
        case capportAnswer(interface: String, generation: UInt64, Result<CapportAnswer, StrictJSON.Malformed>)
        /// The service core's next wake-up, and its housekeeping tick.
        case serviceWake
        case serviceTick
        case trafficSample(target: Int, generation: UInt64, TrafficSample, cost: Duration, takenAt: Instant)
        /// Target `target`'s neighbour check, or its probe past the gateway, ended so.
        case neighborAnswer(target: Int, family: IPFamily, generation: UInt64, NeighborAnswer)
        case beyondAnswer(target: Int, family: IPFamily, generation: UInt64, BeyondAnswer)
        /// An announced sleep ends.
        case wake
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
    var watchedFamily: IPFamily { scenario.family == .ipv6 ? .v6 : .v4 }
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
        kernel = SimulatedKernel(family: scenario.family == .ipv6 ? .v6 : .v4)
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
            let core = TargetCore(
                host: host, family: scenario.family, probeSettings: scenario.settings,
                seed: scenario.seed &+ UInt64(index),
                slots: [watchedFamily: UInt16(index)], stride: stride,
                refresh: .milliseconds(scenario.dnsRefreshMilliseconds))
            // The default target's lookups go first, as the daemon's.
            let target = SimulatedTarget(
                simulation: self, index: index, core: core, settings: scenario.settings,
                routeID: reach.addTarget(families: IPFamily.allCases), lookupsFirst: index == 0)
            target.history.observeStart(boot: BootTime(sinceBoot: .zero))
            target.driver.observeStep = { [unowned self, unowned target] actions in
                if trace != nil { for action in actions { target.log("target: \(action)") } }
                if let broken = TargetCore.outputContractBroken(actions) { violation(broken) }
            }
            targets.append(target)
        }
        fixedWatch = reach.addTarget(families: IPFamily.allCases)
        reach.setTarget(scenario.family == .ipv6 ? Self.v6(0, 9) : .v4([198, 18, 0, 9]), for: fixedWatch)
        for target in targets { noteKernelTruth(resetting: target.routeID) }
        reach.start()
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
            // The earliest wake-up among the targets; on a tie, the lowest number.
            var due: SimulatedTarget?
            for target in targets {
                if let wake = target.wake, wake < next || (wake == next && due == nil) {
                    next = wake
                    due = target
                }
            }
            if let wake = reachWake, wake < next {
                next = wake
                due = nil
            }
            guard next <= end else { break }
            now = max(now, next)
            if let target = due, let wake = target.wake, wake <= now {
                target.log("timeout")
                // As the daemon's targets: a sleep nobody announced is found before any probe times out across it.
                service.handle(.targetWakes)
                target.take(.timeout)
            } else if let wake = reachWake, wake <= now {
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
            if let by = resolver.firstMustStartBy, now > by {
                violation(
                    "a lookup that goes first still waits \(now - by) after the lookup under way when it was asked ended"
                )
            }
        }
        now = end
        for target in targets { target.finish() }
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
        case .reply(let index, let sequence, let token, let path):
            targets[index].deliverReply(sequence, token, path, fromHost: true)
        case .tcpOutcome(let index, let sequence, let token, let outcome, let alone, let fromHost):
            targets[index].ended(sequence, token, outcome, alone: alone, fromHost: fromHost)
        case .icmpError(let index, let sequence, let token, let failure):
            targets[index].deliverError(sequence, token, failure)
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
        case .trafficSample(let index, let generation, let sample, let cost, let takenAt):
            let target = targets[index]
            if generation == target.path.trafficWatch.generation {
                target.newSample = (takenAt, sample.receivingRemotes > 0)
            }
            target.take(.path(watchedFamily, .trafficSampled(generation: generation, sample, cost: cost)))
        case .checkAnswer(let index, let generation, let meaning):
            let target = targets[index]
            // A cancelled check says nothing more, as CheckRun.cancel makes sure.
            guard target.runningCheck?.generation == generation else { return }
            target.runningCheck = nil
            target.heldCheckFaked = target.runningCheckFaked
            target.take(.path(watchedFamily, .checkAnswered(generation: generation, meaning)))
        case .capportAnswer(let interface, let generation, let result):
            // What the follower takes (a cancelled fetch's answer it does not).
            if service.driver.ask({ $0.isFetching(interface: interface, generation: generation) }) {
                if case .success(let answer) = result {
                    apiAnswers[interface] = answer.captive
                } else {
                    apiAnswers[interface] = nil
                }
            }
            service.handle(.portalAPIFetched(interface: interface, generation: generation, result))
        case .serviceWake:
            service.woke()
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
        case .neighborAnswer(let index, let family, let generation, let answer):
            targets[index].neighborAnswered(generation: generation)
            targets[index].take(.path(family, .neighborAnswered(generation: generation, answer)))
        case .beyondAnswer(let index, let family, let generation, let answer):
            targets[index].take(.path(family, .beyondAnswered(generation: generation, answer)))
        case .wake:
            wake()
        case .fault(let fault):
            apply(fault)
        }
    }

    var routedFamilies: IPFamilies { reach.table.routedFamilies }

    func apply(_ fault: Scenario.Fault) {
        applyGatewayFault(fault)
        switch fault {
        case .gateway, .upstreamDies, .sleep:
            break
        case .behaviour(let new):
            behaviour = new
            // The ladder must find a host that answers TCP.
            for target in targets {
                if case .icmpFiltered(_, let path) = new, path == .accepts || path == .resets {
                    if target.filteredSince == nil { target.filteredSince = now }
                } else {
                    target.filteredSince = nil
                    target.pathTroubleSinceFiltered = false
                }
            }
        case .resolver(let new):
            resolver.behaviour = new
            resolverAnsweringSince = new == .answering ? resolverAnsweringSince ?? now : nil
        case .check(let new):
            checkBehaviour = new
            // A check already under way meets the new network part way: its answer proves nothing either way.
            for target in targets { target.runningCheckFaked = false }
        case .api(let new):
            apiBehaviour = new
            service.announceAPI()
        case .traffic(let new):
            trafficBehaviour = new
            trafficSince = now
        case .linkUp(let index, let up):
            kernel.setAdministrativelyUp(index, up)
        case .carrier(let index, let on):
            kernel.setCarrier(index, on)
        case .route(let index, let present):
            kernel.setRoute(index, present: present)
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
            target.take(.probeSettings(new))
        case .forgeries where scenario.probeMethod == .tcp:
            break // without an ICMP socket there is nothing to forge into
        case .forgeries(let count):
            pick(targets).forge(count)
        case .heal:
            quiet = true
            behaviour = .answering(minRTT: 1, maxRTT: 20, loss: 0)
            resolver.behaviour = .answering
            resolverAnsweringSince = resolverAnsweringSince ?? now
            checkBehaviour = .expected(milliseconds: 20)
            apiBehaviour = .none
            service.announceAPI()
            for target in targets {
                target.runningCheckFaked = false
                target.filteredSince = nil
                target.pathTroubleSinceFiltered = false
            }
            for index: Int32 in [2, 3] {
                kernel.setAdministrativelyUp(index, true)
                kernel.setCarrier(index, true)
                kernel.setRoute(index, present: true)
            }
            // A Host Set to one that hangs or fails is Set back: the default target's to a.test, another's to its own.
            for target in targets {
                let host = target.path.monitor.host
                let own = target.index == 0 ? "a.test" : scenario.extraTargets[target.index - 1]
                if host != own, host == "hang.test" || host == "fail.test" {
                    target.take(.targetChanged(host: own, family: scenario.family))
                }
            }
        }
        switch fault {
        case .linkUp, .carrier, .route, .heal: noteKernelTruth()
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

    func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }

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
        targetsWithNews = false
        for target in targets where target.stateDue {
            target.stateDue = false
            target.checkResolution()
            target.checkBeyondTheHost()
            target.checkWhereItBroke()
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

/// What the world hands one target: the host's answers, the errors routers send about its probes,
/// Checks, forgeries.
extension SimulatedTarget {
    /// An answer from the host (an echo reply, or its TCP), or one that claims to be.
    func deliverReply(_ sequence: UInt16, _ token: UInt64, _ via: AnswerPath, fromHost: Bool) {
        // Silence that ended before this answer came first.
        noteExpiries()
        let answeredBefore = path.probe.statistics.answered
        take(.path(watchedFamily, .probe(.reply(sequence: sequence, token: token, via: via))))
        if path.probe.statistics.answered > answeredBefore {
            if !fromHost {
                violation(
                    "probe \(sequence) counted as answered though only a router spoke (its ICMP error about the TCP connection)"
                )
            }
            sent[sequence]?.finished = true
            sent[sequence]?.answered = true
            newestAnsweredSentAt = max(newestAnsweredSentAt, sent[sequence]?.sentAt ?? .origin)
            lastAnswerAt = now
            failureKindsSinceAnswer = []
            firstFailureSentAt = nil
            onScheduleSinceAnswer = true
            answersInRow += 1
        }
    }

    /// A TCP probe's connection ended so.
    func ended(_ sequence: UInt16, _ token: UInt64, _ outcome: TCPOutcome, alone: Bool, fromHost: Bool) {
        // The transport's rule: a connection's end counts only while its probe waits.
        let input = outcome.input(
            sequence: sequence, token: token, alone: alone, outstanding: path.isOutstanding(sequence)
        ) {
            "cannot reach the host: error \($0)"
        }
        switch input {
        case .reply(_, _, let via)?:
            deliverReply(sequence, token, via, fromHost: fromHost)
        case .refused(_, _, let reason)?:
            let inFlight = path.isOutstanding(sequence)
            take(.path(watchedFamily, .probe(.refused(sequence: sequence, token: token, reason: reason))))
            if inFlight, let probe = sent[sequence], probe.sentAt > newestAnsweredSentAt {
                sent[sequence]?.finished = true
                failureKindsSinceAnswer.insert("refused")
                answersInRow = 0
            }
        default:
            break
        }
    }

    /// A router's ICMP error quoting one of the probes (or claiming to).
    func deliverError(_ sequence: UInt16, _ token: UInt64?, _ failure: EchoPacket.Failure) {
        let foreignBefore = path.probe.statistics.foreign
        take(.path(watchedFamily, .probe(.error(sequence: sequence, token: token, failure, from: "198.18.200.1"))))
        // About a probe in flight (else it was counted foreign).
        guard path.probe.statistics.foreign == foreignBefore else { return }
        // An error that cannot be verified ends nothing: a reply may still come, and only its deadline decides.
        guard token != nil else {
            sent[sequence]?.unproven = failure == .timeExceeded ? "time exceeded" : "unproven"
            return
        }
        sent[sequence]?.finished = true
        // A probe older than the newest answered one: old news, no failure.
        guard let probe = sent[sequence], probe.sentAt > newestAnsweredSentAt,
            !probe.extra || failure != .timeExceeded
        else { return }
        if firstFailureSentAt == nil { firstFailureSentAt = probe.sentAt }
        failureKindsSinceAnswer.insert(failure == .timeExceeded ? "time exceeded" : "refused")
        answersInRow = 0
    }

    func check() {
        simulation.summary.checks += 1
        // Pending before the probe goes out, as MonitorObject keeps it: a probe that fails at once answers it.
        let pending = (arrival: now, limit: now + 2 * settings.timeout)
        if driver.check() == true { pendingChecks.append(pending) }
    }

    /// Forged answers and errors: they know what /proc/net/icmp shows and can guess sequences near
    /// ours; never the token. Sorted: a dictionary's order changes from process to process, and a
    /// seed must replay anywhere.
    func forge(_ count: Int) {
        let outstanding = sent.filter { !$0.value.finished && $0.value.deadline > now }.map(\.key).sorted()
        for _ in 0..<count {
            let random = simulation.random.next()
            let sequence =
                outstanding.isEmpty
                ? UInt16(truncatingIfNeeded: random) : outstanding[Int(random % UInt64(outstanding.count))]
            let at = now + .nanoseconds(simulation.random.next() % 500_000_000)
            if simulation.random.next() % 2 == 0 {
                simulation.queue.add(
                    .icmpError(target: index, sequence: sequence, token: nil, .unreachable(code: 1)), at: at)
            } else {
                simulation.queue.add(
                    .reply(target: index, sequence: sequence, token: simulation.random.next(), via: .icmp), at: at)
            }
        }
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
            case .reportChanged(let old, let new):
                log("report \(String(describing: new.answering)) \(new.reason)")
                checkFlip(from: old, to: new)
            case .verdictReady:
                answerChecks()
            }
        }
    }
}
