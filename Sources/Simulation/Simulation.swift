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
        /// The longest any Check waited for its verdict.
        public var longestCheckWait = Duration.zero
        /// Every Status the monitor published, with when.
        public var statuses: [(at: Instant, status: Status, reason: String)] = []
        public var finalStatus: Status = .unknown
    }

    enum Event {
        case reply(sequence: UInt16, token: UInt64, via: AnswerPath)
        /// A TCP probe's connection ended so; `fromHost`: the host itself spoke (else a router, or nobody).
        case tcpOutcome(sequence: UInt16, token: UInt64, TCPOutcome, alone: Bool, fromHost: Bool)
        case icmpError(sequence: UInt16, token: UInt64?, EchoPacket.Failure)
        case kernelReadable
        /// A lookup for target `target` (0 the default, then the extra ones) ended; `worker`: the resolver's
        /// thread ran it (an address is answered at once, without it), and is free again.
        case resolverAnswer(target: Int, generation: UInt64, Result<[IPAddress], ResolverFailure>, worker: Bool)
        case extraReply(target: Int, sequence: UInt16, token: UInt64)
        case checkAnswer(generation: UInt64, CheckAnswer.Meaning)
        /// The captive-portal API's answer to fetch `generation` on `interface`.
        case capportAnswer(interface: String, generation: UInt64, Result<CapportAnswer, StrictJSON.Malformed>)
        /// The follower's next wake-up.
        case capportWake
        case trafficSample(generation: UInt64, TrafficSample, cost: Duration, takenAt: Instant)
        /// Target `target`'s neighbour check, or its probe past the gateway, ended so.
        case neighborAnswer(target: Int, family: IPFamily, generation: UInt64, NeighborAnswer)
        case beyondAnswer(target: Int, family: IPFamily, generation: UInt64, BeyondAnswer)
        /// An announced sleep ends.
        case wake
        case fault(Scenario.Fault)
    }

    struct SentProbe {
        let sentAt: Instant
        let deadline: Instant
        /// Sent beside a probe in flight: its silence or unproven error is no failure of its own.
        let extra: Bool
        var finished = false
        var answered = false
    }

    let scenario: Scenario
    var random: SeededRandom
    var now = Instant.origin
    var queue = EventQueue<Event>()
    /// Arrival times of Checks still to come, latest first (floods are thousands; the queue stays small).
    var checkArrivals: [Instant] = []
    var kernel: SimulatedKernel
    /// The default target's world, and the driver the daemon runs too.
    lazy var first = SimulatedTarget(simulation: self, index: 0, core: initialCore)
    /// The path of the family the scenario watches (the other is not watched: nothing may be sent in it).
    var target: PathCore {
        unsafeAddress { first.driver.path(watchedFamily) }
    }
    var watchedFamily: IPFamily { scenario.family == .ipv6 ? .v6 : .v4 }
    let initialCore: TargetCore
    var reach: ReachabilityCore
    public internal(set) var state = MonitorState()
    public internal(set) var summary = Summary()
    /// The probe settings in force (the simulation changes them, so it knows them without asking).
    var settings: ProbeSettings
    var behaviour: Scenario.HostBehaviour = .answering(minRTT: 1, maxRTT: 20, loss: 0)
    /// Since when the resolver answers again; when it last failed a lookup of Host's name.
    var resolverAnsweringSince: Instant? = .origin
    var lastLookupFailureAt = Instant.origin
    /// When the lookup of Host's name still waiting for its answer started on the resolver's thread.
    var lookupAskedAt: Instant?
    var resolver = SimulatedResolver()
    /// The targets added beside the default one (restored before it starts), sharing its resolver
    /// and reachability core; each is a TargetCore in the daemon's driver, like the default one.
    final class ExtraTarget {
        let world: SimulatedTarget
        let routeID: ReachabilityCore.TargetID
        var probeAddress: IPAddress?
        var state = MonitorState()

        init(world: SimulatedTarget, routeID: ReachabilityCore.TargetID) {
            self.world = world
            self.routeID = routeID
        }
    }
    /// The extra targets probe at their own, slower pace: they are here for the resolver and the route core they share.
    static let extraTargetSettings = ProbeSettings(intervalMilliseconds: 5_000, timeoutMilliseconds: 1_000)
    var extras: [ExtraTarget] = []
    var checkBehaviour: Scenario.CheckBehaviour = .expected(milliseconds: 20)
    /// The check under way was answered by a middlebox with the echo asked, or had HTTPS dropped with the
    /// secure check on, from its start to its end; and whether the answer the core holds came from such a check.
    var runningCheckFaked = false
    var heldCheckFaked = false
    /// The network's captive-portal API, and the follower that asks it (as the daemon's CapportWatch does).
    var apiBehaviour: Scenario.APIBehaviour = .none
    var follower = CapportFollower()
    var capportWakeAt: Instant?
    /// Each interface's last API answer taken, and whether a captive one came from the captive API.
    var apiAnswers: [String: Bool] = [:]
    static let apiPortalURL = "https://portal.test/api-login"
    /// The next hop, the path past it, the sleeps, and the history (see `GatewayWorld`).
    var gateway = GatewayWorld()
    var trafficBehaviour: Scenario.TrafficBehaviour = .none
    var trafficSince = Instant.origin
    /// Since when the path to Host has failed (the connections routed like it then stall).
    var pathDownSince: Instant?
    /// The newest sample the core took: when, and whether data from a remote routed like Host was in it.
    var lastSample: (at: Instant, receiving: Bool)?
    /// A sample the core took during this step: it counts for skips from the next step on.
    var newSample: (at: Instant, receiving: Bool)?
    /// The word the core last had; a stall (or traffic stopping) still waiting for its probe.
    var lastTraffic: Traffic = .none
    var stallWaitingSince: Instant?
    var resumeWaitingSince: Instant?
    var skippedSinceSend = false
    var skippedSoFar = 0
    /// The check of CheckURL under way, and its limit, max(5 s, Timeout) when it started.
    var runningCheck: (generation: UInt64, startedAt: Instant, limit: Duration)?
    static let checkURL = "http://check.test/generate_204"
    static let secureCheckURL = "https://check.test/generate_204"
    /// Since when the far host filters ICMP (and answers TCP); whether its path failed meanwhile.
    var filteredSince: Instant?
    var pathTroubleSinceFiltered = false
    var probeTarget: IPAddress?
    var kernelReadScheduled = false
    var stateDue = false
    /// What the default target's driver reported during this step, checked once the step's own
    /// bookkeeping is done (the probe that ended is counted first, as the rules count it).
    var reported: [Reported] = []
    enum Reported {
        case reportChanged(old: ProbeReport, new: ProbeReport)
        case verdictReady
    }
    var overflowOnNextLookup = false
    /// Every (usable, interface) the kernel's truth took for each of the reachability core's targets
    /// (target 0's since its address last changed).
    var truthsSinceRetarget: [ReachabilityCore.TargetID: Set<String>] = [:]
    /// A second target on the same core, with a fixed address: lookups for two targets share
    /// every overrun and dump.
    var secondTarget: ReachabilityCore.TargetID = 0
    /// The default target's watch on the reachability core (added first, like any other).
    var firstRoute: ReachabilityCore.TargetID = 0
    var evaluationDue = false
    var quiet = false
    /// Something the reachability core sees changed since its agreement with the kernel was last checked.
    var routeNewsSinceCheck = true

    // What the invariants need, kept independently of the cores.
    var sent: [UInt16: SentProbe] = [:]
    var lastAnswerAt = Instant.origin
    var failureKindsSinceAnswer: Set<String> = []
    var answersInRow = 0
    /// When the newest probe that got its answer was sent.
    var newestAnsweredSentAt = Instant.origin
    /// When the probe whose failure was the first since the last answer was sent.
    var firstFailureSentAt: Instant?
    /// No probe since the last answer was sent off the schedule (for a Check, a route regained).
    var onScheduleSinceAnswer = true
    var lastForcedAt: Instant?
    var lastSettingsChange = Instant.origin
    var lastRetarget = Instant.origin
    /// Pending Checks: when each arrived, and by when its verdict must be in.
    var pendingChecks: [(arrival: Instant, limit: Instant)] = []
    public internal(set) var violations: [Violation] = []
    /// Told every step, when set: for reading a failing seed's run.
    public var trace: ((String) -> Void)?

    func log(_ text: @autoclosure () -> String) {
        trace?("\(Double(now.sinceOrigin.microseconds) / 1000) ms  \(text())")
    }

    public init(_ scenario: Scenario) {
        self.scenario = scenario
        random = SeededRandom(seed: scenario.seed ^ 0x5EED)
        kernel = SimulatedKernel(family: scenario.family == .ipv6 ? .v6 : .v4)
        initialCore = TargetCore(host: scenario.host, family: scenario.family, probeSettings: scenario.settings, seed: scenario.seed,
                                 refresh: .milliseconds(scenario.dnsRefreshMilliseconds))
        settings = scenario.settings
        reach = ReachabilityCore { link in link.name.hasPrefix("wlan") ? .wifi : .ethernet }
        for (at, fault) in scenario.timeline { queue.add(.fault(fault), at: .origin + .milliseconds(at)) }
    }

    /// Runs the scenario to its end; returns the violations found (none when every rule held).
    @discardableResult
    public func run() -> [Violation] {
        firstRoute = reach.addTarget(families: IPFamily.allCases)
        secondTarget = reach.addTarget(families: IPFamily.allCases)
        reach.setTarget(scenario.family == .ipv6 ? Self.v6(0, 9) : .v4([198, 18, 0, 9]), for: secondTarget)
        noteKernelTruth(reset: true)
        reach.start()
        gateway.history.observeStart(boot: 0)
        first.driver.observeStep = { [unowned self] actions in
            for action in actions { log("target: \(action)") }
            checkPublication(actions)
        }
        for (index, host) in scenario.extraTargets.enumerated() {
            let core = TargetCore(host: host, family: scenario.family, probeSettings: Self.extraTargetSettings,
                                  seed: scenario.seed &+ UInt64(index + 1), slots: [watchedFamily: UInt16(index + 1)], stride: UInt16(scenario.extraTargets.count + 1))
            extras.append(ExtraTarget(world: SimulatedTarget(simulation: self, index: index + 1, core: core),
                                      routeID: reach.addTarget(families: [watchedFamily])))
            takeExtra(index + 1, .start(checkURL: ""))
        }
        pump()
        take(.start(checkURL: scenario.checkURL ? Self.checkURL : scenario.secureCheck ? Self.secureCheckURL : ""))
        pump()
        let end = Instant.origin + .milliseconds(scenario.duration)
        while violations.isEmpty {
            let targetWake = first.wake
            let reachWake = askReach(\.nextWakeup)
            var next = queue.nextTime ?? end
            if let check = checkArrivals.last, check < next { next = check }
            if let wake = targetWake, wake < next { next = wake }
            if let wake = reachWake, wake < next { next = wake }
            var extraDue: Int?
            for index in extras.indices {
                if let wake = extras[index].world.wake, wake < next || (wake == next && extraDue == nil) {
                    next = wake
                    extraDue = index + 1
                }
            }
            guard next <= end else { break }
            now = max(now, next)
            if let wake = targetWake, wake <= now {
                log("timeout")
                take(.timeout)
            } else if let index = extraDue, let wake = extras[index - 1].world.wake, wake <= now {
                takeExtra(index, .timeout)
            } else if let wake = reachWake, wake <= now {
                reach.handleTimeout(now: now)
            } else if let arrival = checkArrivals.last, arrival <= now, arrival < queue.nextTime ?? .distantFuture {
                checkArrivals.removeLast()
                check()
            } else if let first = queue.nextTime, first <= now, let (_, event) = queue.removeFirst() {
                handle(event)
            } else {
                break  // nothing left before the end
            }
            summary.events += 1
            pump()
            endOfTurn()
            checkKernelAgreement()
            checkTraffic()
            checkBlameLate()
            if let by = resolver.defaultMustStartBy, now > by {
                violation("the default target's lookup still waits \(now - by) after the lookup under way when it was asked ended")
            }
        }
        now = end
        finish()
        summary.finalStatus = state.status
        return violations
    }

    /// What `question` says of the reachability core, asked in place: a method called on a stored
    /// struct runs on a copy.
    func askReach<Answer>(_ question: (ReachabilityCore) -> Answer) -> Answer { Self.ask(&reach, question) }

    private static func ask<Answer>(_ core: inout ReachabilityCore, _ question: (ReachabilityCore) -> Answer) -> Answer {
        question(core)
    }

    func handle(_ event: Event) {
        log("\(event)")
        switch event {
        case .reply(let sequence, let token, let path):
            deliverReply(sequence, token, path, fromHost: true)
        case .tcpOutcome(let sequence, let token, let outcome, let alone, let fromHost):
            // The transport's rule: a connection's end counts only while its probe waits.
            let input = outcome.input(sequence: sequence, token: token, alone: alone, outstanding: target.isOutstanding(sequence)) {
                "cannot reach the host: error \($0)"
            }
            switch input {
            case .reply(_, _, let path)?:
                deliverReply(sequence, token, path, fromHost: fromHost)
            case .refused(_, _, let reason)?:
                let inFlight = target.isOutstanding(sequence)
                take(.probe(watchedFamily, .refused(sequence: sequence, token: token, reason: reason)))
                if inFlight, let sent = sent[sequence], sent.sentAt > newestAnsweredSentAt {
                    self.sent[sequence]?.finished = true
                    failureKindsSinceAnswer.insert("refused")
                    answersInRow = 0
                }
            default:
                break
            }
        case .icmpError(let sequence, let token, let failure):
            let foreignBefore = target.probe.statistics.foreign
            take(.probe(watchedFamily, .error(sequence: sequence, token: token, failure, from: "198.18.200.1")))
            // About a probe in flight (else it was counted foreign).
            if target.probe.statistics.foreign == foreignBefore {
                sent[sequence]?.finished = true
                // A probe older than the newest answered one: old news, no failure.
                guard let probe = sent[sequence], probe.sentAt > newestAnsweredSentAt,
                      !probe.extra || (token != nil && failure != .timeExceeded) else { return }
                if firstFailureSentAt == nil { firstFailureSentAt = probe.sentAt }
                failureKindsSinceAnswer.insert(failure == .timeExceeded ? "time exceeded" : token == nil ? "unproven" : "refused")
                answersInRow = 0
            }
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
        case .trafficSample(let generation, let sample, let cost, let takenAt):
            if generation == target.trafficWatch.generation { newSample = (takenAt, sample.receivingRemotes > 0) }
            take(.trafficSampled(watchedFamily, generation: generation, sample, cost: cost))
        case .checkAnswer(let generation, let meaning):
            // A cancelled check says nothing more, as CheckRun.cancel makes sure.
            guard runningCheck?.generation == generation else { return }
            runningCheck = nil
            heldCheckFaked = runningCheckFaked
            take(.checkAnswered(watchedFamily, generation: generation, meaning))
        case .capportAnswer(let interface, let generation, let result):
            // What the follower takes (a cancelled fetch's answer it does not).
            if follower.isUnderway(interface: interface, generation: generation) {
                if case .success(let answer) = result { apiAnswers[interface] = answer.captive } else { apiAnswers[interface] = nil }
            }
            let (changed, actions) = follower.fetched(interface: interface, generation: generation, result, now: now)
            carryOut(actions)
            if changed { tellAPIFacts() }
        case .capportWake:
            capportWakeAt = nil
            carryOut(follower.handleTimeout(now: now))
        case .resolverAnswer(let index, let generation, let result, let worker):
            if worker { resolver.finished() }
            if index == 0 {
                if generation == first.driver.core.generation {
                    lookupAskedAt = nil
                    if case .failure = result { lastLookupFailureAt = now }
                }
                take(.resolved(generation: generation, result, routedFamilies: routedFamilies))
            } else {
                takeExtra(index, .resolved(generation: generation, result, routedFamilies: routedFamilies))
            }
            startNextLookup()
        case .extraReply(let index, let sequence, let token):
            takeExtra(index, .probe(watchedFamily, .reply(sequence: sequence, token: token, via: .icmp)))
        case .neighborAnswer(let index, let family, let generation, let answer):
            let event = TargetCore.Event.neighborAnswered(family, generation: generation, answer)
            if index == 0 {
                neighborAnswered(generation: generation)
                take(event)
            } else {
                takeExtra(index, event)
            }
        case .beyondAnswer(let index, let family, let generation, let answer):
            let event = TargetCore.Event.beyondAnswered(family, generation: generation, answer)
            if index == 0 { take(event) } else { takeExtra(index, event) }
        case .wake:
            wake()
        case .fault(let fault):
            apply(fault)
        }
    }

    var routedFamilies: Set<IPFamily> { reach.table.routedFamilies }

    /// An answer from the host (an echo reply, or its TCP), or one that claims to be.
    func deliverReply(_ sequence: UInt16, _ token: UInt64, _ path: AnswerPath, fromHost: Bool) {
        // Silence that ended before this answer came first.
        noteExpiries()
        let answeredBefore = target.probe.statistics.answered
        take(.probe(watchedFamily, .reply(sequence: sequence, token: token, via: path)))
        if target.probe.statistics.answered > answeredBefore {
            if !fromHost { violation("probe \(sequence) counted as answered though only a router spoke (its ICMP error about the TCP connection)") }
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

    func check() {
        summary.checks += 1
        // Pending before the probe goes out, as MonitorObject keeps it: a probe that fails at once answers it.
        let pending = (arrival: now, limit: now + 2 * settings.timeout)
        if first.driver.check() == true { pendingChecks.append(pending) }
    }

    func apply(_ fault: Scenario.Fault) {
        applyGatewayFault(fault)
        switch fault {
        case .gateway, .upstreamDies, .sleep:
            break
        case .behaviour(let new):
            behaviour = new
            // The ladder must find a host that answers TCP.
            if case .icmpFiltered(_, let path) = new, path == .accepts || path == .resets {
                if filteredSince == nil { filteredSince = now }
            } else {
                filteredSince = nil
                pathTroubleSinceFiltered = false
            }
        case .resolver(let new):
            resolver.behaviour = new
            resolverAnsweringSince = new == .answering ? resolverAnsweringSince ?? now : nil
        case .check(let new):
            checkBehaviour = new
            // A check already under way meets the new network part way: its answer proves nothing either way.
            runningCheckFaked = false
        case .api(let new):
            apiBehaviour = new
            announceAPI()
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
        case .host(let name):
            take(.targetChanged(host: name, family: scenario.family))
        case .settings(let new):
            lastSettingsChange = now
            settings = new
            take(.probeSettings(new))
        case .forgeries where scenario.probeMethod == .tcp:
            break  // without an ICMP socket there is nothing to forge into
        case .forgeries(let count):
            // They know what /proc/net/icmp shows and can guess sequences near ours; never the token.
            // Sorted: a dictionary's order changes from process to process, and a seed must replay anywhere.
            let outstanding = sent.filter { !$0.value.finished && $0.value.deadline > now }.map(\.key).sorted()
            for _ in 0..<count {
                let sequence = outstanding.isEmpty ? UInt16(truncatingIfNeeded: random.next()) : outstanding[Int(random.next() % UInt64(outstanding.count))]
                let at = now + .nanoseconds(random.next() % 500_000_000)
                if random.next() % 2 == 0 {
                    queue.add(.icmpError(sequence: sequence, token: nil, .unreachable(code: 1)), at: at)
                } else {
                    queue.add(.reply(sequence: sequence, token: random.next(), via: .icmp), at: at)
                }
            }
        case .heal:
            quiet = true
            behaviour = .answering(minRTT: 1, maxRTT: 20, loss: 0)
            resolver.behaviour = .answering
            resolverAnsweringSince = resolverAnsweringSince ?? now
            checkBehaviour = .expected(milliseconds: 20)
            runningCheckFaked = false
            apiBehaviour = .none
            announceAPI()
            filteredSince = nil
            pathTroubleSinceFiltered = false
            for index: Int32 in [2, 3] {
                kernel.setAdministrativelyUp(index, true)
                kernel.setCarrier(index, true)
                kernel.setRoute(index, present: true)
            }
            if target.monitor.host == "hang.test" || target.monitor.host == "fail.test" {
                take(.targetChanged(host: "a.test", family: scenario.family))
            }
        }
        switch fault {
        case .linkUp, .carrier, .route, .heal: noteKernelTruth(reset: false)
        default: break
        }
        notePath()
        scheduleKernelRead()
    }

    /// The network announces its API on every link (or stops): the follower hears of it as CapportWatch would.
    func announceAPI() {
        let uris = apiBehaviour == .none ? [:] : ["eth0": "https://api.test/capport", "wlan0": "https://api.test/capport"]
        let before = follower.facts
        if uris.isEmpty { apiAnswers = [:] }
        carryOut(follower.announced(uris, now: now))
        if follower.facts != before { tellAPIFacts() }
    }

    /// What the APIs said, in the link facts the target reads (no ModemManager or NetworkManager here).
    func tellAPIFacts() {
        take(.linkFacts(LinkFactsTable().with(portalAPIs: follower.facts)))
    }

    /// A fetch as CheckRun runs it for CapportWatch: the answer after a round trip, or the limit's end.
    func carryOut(_ actions: [CapportFollower.Action]) {
        for action in actions {
            guard case .fetch(let interface, _, let generation) = action else { continue }
            let limit = Duration.milliseconds(PortalCheck.limitMilliseconds(timeout: settings.timeoutMilliseconds))
            let (after, result): (Duration, Result<CapportAnswer, StrictJSON.Malformed>) = switch apiBehaviour {
            case .captive: (.milliseconds(10), .success(CapportAnswer(captive: true, userPortalURL: Self.apiPortalURL)))
            case .open: (.milliseconds(10), .success(CapportAnswer(captive: false, secondsRemaining: random.next() % 4000)))
            case .malformed:
                (.milliseconds(10), CapportAnswer.parse(Array(pick(Self.malformedAnswers).utf8)))
            case .hanging, .none: (limit, .failure(StrictJSON.Malformed(text: "timed out")))
            }
            queue.add(.capportAnswer(interface: interface, generation: generation, result), at: now + after)
        }
        if let wake = follower.nextWakeup, capportWakeAt.map({ wake < $0 }) ?? true {
            capportWakeAt = wake
            queue.add(.capportWake, at: max(wake, now))
        }
    }

    static let malformedAnswers = [#"{"captive": true}"#, #"{"captive": true, "user-portal-url": "http://portal.test/"}"#,
                                   #"{"captive": "yes", "user-portal-url": "https://portal.test/"}"#, "<html>",
                                   #"{"captive": true, "captive": false, "user-portal-url": "https://portal.test/"}"#]

    func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }

    /// Hands `event` to the default target's driver, which carries out its actions at once.
    func take(_ event: TargetCore.Event) {
        first.driver.handle(event)
    }

    func pump() {
        var busy = true
        while busy {
            busy = false
            if !reported.isEmpty {
                busy = true
                let batch = reported
                reported = []
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
            for output in reach.takeOutputs() {
                busy = true
                carryOut(output)
            }
        }
        if stateDue {
            stateDue = false
            checkResolution()
            checkBeyondTheHost()
            checkWhereItBroke()
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
