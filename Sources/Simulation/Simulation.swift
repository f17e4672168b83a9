import Glibc
import HTTPCheck
import MonitorService
import NetCore
import Probe
import Reachability

/// Drives the daemon's own `TargetCore` (the monitor and probe cores composed once) and the
/// reachability core on a virtual clock, against a simulated kernel, far host and
/// resolver, and checks INTERFACE.md's rules after every step. Deterministic: one
/// seed reproduces a run.
public final class Simulation {
    public struct Violation: Error, CustomStringConvertible, Sendable {
        public let seed: UInt64
        public let at: UInt64
        public let rule: String
        public var description: String {
            "seed \(seed), at \(Double(at) / 1e9) s: \(rule)"
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
        /// The longest any Check waited for its verdict, nanoseconds.
        public var longestCheckWait: UInt64 = 0
        /// Every Status the monitor published, with when.
        public var statuses: [(at: UInt64, status: Status, reason: String)] = []
        public var finalStatus: Status = .unknown
    }

    private enum Event {
        case reply(sequence: UInt16, token: UInt64, via: AnswerPath)
        /// A TCP probe's connection ended so; `fromHost`: the host itself spoke (else a router, or nobody).
        case tcpOutcome(sequence: UInt16, token: UInt64, TCPOutcome, alone: Bool, fromHost: Bool)
        case icmpError(sequence: UInt16, token: UInt64?, EchoPacket.Failure)
        case kernelReadable
        /// A lookup for target `target` (0 the default, then the extra ones) ended; `worker`: the resolver's
        /// thread ran it (an address is answered at once, without it), and is free again.
        case resolverAnswer(target: Int, generation: UInt64, Result<[IPAddress], HostResolver.Failure>, worker: Bool)
        case extraReply(target: Int, sequence: UInt16, token: UInt64)
        case checkAnswer(generation: UInt64, CheckAnswer.Meaning)
        case trafficSample(generation: UInt64, TrafficSample, cost: UInt64, takenAt: UInt64)
        case fault(Scenario.Fault)
    }

    private struct SentProbe {
        let sentAt: UInt64
        let deadline: UInt64
        /// Sent beside a probe in flight: its silence or unproven error is no failure of its own.
        let extra: Bool
        var finished = false
        var answered = false
    }

    private let scenario: Scenario
    private var random: SeededRandom
    fileprivate var now: UInt64 = 0
    private var queue = EventQueue<Event>()
    /// Arrival times of Checks still to come, latest first (floods are thousands; the queue stays small).
    private var checkArrivals: [UInt64] = []
    private var kernel: SimulatedKernel
    /// The default target's world, and the driver the daemon runs too.
    private lazy var first = SimulatedTarget(simulation: self, index: 0, core: initialCore)
    private var target: TargetCore {
        _read { yield first.driver.core }
    }
    private let initialCore: TargetCore
    fileprivate var reach: ReachabilityCore
    public private(set) var state = MonitorState()
    public private(set) var summary = Summary()
    /// The probe settings in force (the simulation changes them, so it knows them without asking).
    private var settings: ProbeSettings
    private var behaviour: Scenario.HostBehaviour = .answering(minRTT: 1, maxRTT: 20, loss: 0)
    /// Since when the resolver answers again; when it last failed a lookup of Host's name.
    private var resolverAnsweringSince: UInt64? = 0
    private var lastLookupFailureAt: UInt64 = 0
    /// When the lookup of Host's name still waiting for its answer started on the resolver's thread.
    private var lookupAskedAt: UInt64?
    fileprivate var resolver = SimulatedResolver()
    /// The targets added beside the default one (restored before it starts), sharing its resolver
    /// and reachability core; each is a TargetCore in the daemon's driver, like the default one.
    fileprivate final class ExtraTarget {
        let world: SimulatedTarget
        let routeID: ReachabilityCore.TargetID
        var probeAddress: IPAddress?
        var state = MonitorState()
        var core: TargetCore { world.driver.core }

        init(world: SimulatedTarget, routeID: ReachabilityCore.TargetID) {
            self.world = world
            self.routeID = routeID
        }
    }
    /// The extra targets probe at their own, slower pace: they are here for the resolver and the route core they share.
    static let extraTargetSettings = ProbeSettings(intervalMilliseconds: 5_000, timeoutMilliseconds: 1_000)
    fileprivate var extras: [ExtraTarget] = []
    private var checkBehaviour: Scenario.CheckBehaviour = .expected(milliseconds: 20)
    private var trafficBehaviour: Scenario.TrafficBehaviour = .none
    private var trafficSince: UInt64 = 0
    /// Since when the path to Host has failed (the connections routed like it then stall).
    private var pathDownSince: UInt64?
    /// The newest sample the core took: when, and whether data from a remote routed like Host was in it.
    private var lastSample: (at: UInt64, receiving: Bool)?
    /// A sample the core took during this step: it counts for skips from the next step on.
    private var newSample: (at: UInt64, receiving: Bool)?
    /// The word the core last had; a stall (or traffic stopping) still waiting for its probe.
    private var lastTraffic: Traffic = .none
    private var stallWaitingSince: UInt64?
    private var resumeWaitingSince: UInt64?
    private var skippedSinceSend = false
    private var skippedSoFar = 0
    /// The check of CheckURL under way, and its limit, max(5 s, Timeout) when it started.
    fileprivate var runningCheck: (generation: UInt64, startedAt: UInt64, limit: UInt64)?
    static let checkURL = "http://check.test/generate_204"
    /// Since when the far host filters ICMP (and answers TCP); whether its path failed meanwhile.
    private var filteredSince: UInt64?
    private var pathTroubleSinceFiltered = false
    private var probeTarget: IPAddress?
    private var kernelReadScheduled = false
    private var stateDue = false
    /// What the default target's driver reported during this step, checked once the step's own
    /// bookkeeping is done (the probe that ended is counted first, as the rules count it).
    fileprivate var reported: [Reported] = []
    fileprivate enum Reported {
        case reportChanged(old: ProbeReport, new: ProbeReport)
        case verdictReady
    }
    private var overflowOnNextLookup = false
    /// Every (usable, interface) the kernel's truth took for each of the reachability core's targets
    /// (target 0's since its address last changed).
    private var truthsSinceRetarget: [ReachabilityCore.TargetID: Set<String>] = [:]
    /// A second target on the same core, with a fixed address: lookups for two targets share
    /// every overrun and dump.
    private var secondTarget: ReachabilityCore.TargetID = 0
    private var evaluationDue = false
    private var quiet = false
    /// Something the reachability core sees changed since its agreement with the kernel was last checked.
    private var routeNewsSinceCheck = true

    // What the invariants need, kept independently of the cores.
    private var sent: [UInt16: SentProbe] = [:]
    private var lastAnswerAt: UInt64 = 0
    private var failureKindsSinceAnswer: Set<String> = []
    private var answersInRow = 0
    /// When the newest probe that got its answer was sent.
    private var newestAnsweredSentAt: UInt64 = 0
    /// When the probe whose failure was the first since the last answer was sent.
    private var firstFailureSentAt: UInt64?
    /// No probe since the last answer was sent off the schedule (for a Check, a route regained).
    private var onScheduleSinceAnswer = true
    private var lastForcedAt: UInt64?
    private var lastSettingsChange: UInt64 = 0
    private var lastRetarget: UInt64 = 0
    /// Pending Checks: when each arrived, and by when its verdict must be in.
    private var pendingChecks: [(arrival: UInt64, limit: UInt64)] = []
    public private(set) var violations: [Violation] = []
    /// Told every step, when set: for reading a failing seed's run.
    public var trace: ((String) -> Void)?

    fileprivate func log(_ text: @autoclosure () -> String) {
        trace?("\(Double(now / 1000) / 1000) ms  \(text())")
    }

    public init(_ scenario: Scenario) {
        self.scenario = scenario
        random = SeededRandom(seed: scenario.seed ^ 0x5EED)
        kernel = SimulatedKernel(family: scenario.family == .ipv6 ? AF_INET6 : AF_INET)
        initialCore = TargetCore(host: scenario.host, family: scenario.family, probeSettings: scenario.settings, seed: scenario.seed,
                                 refreshNanoseconds: scenario.dnsRefreshMilliseconds * 1_000_000)
        settings = scenario.settings
        reach = ReachabilityCore(families: [AF_INET, AF_INET6]) { link in link.name.hasPrefix("wlan") ? .wifi : .ethernet }
        for (at, fault) in scenario.timeline { queue.add(.fault(fault), at: at * 1_000_000) }
    }

    /// Runs the scenario to its end; returns the violations found (none when every rule held).
    @discardableResult
    public func run() -> [Violation] {
        secondTarget = reach.addTarget(families: [AF_INET, AF_INET6])
        reach.setTarget(scenario.family == .ipv6 ? Self.v6(0, 9) : .v4([198, 18, 0, 9]), for: secondTarget)
        noteKernelTruth(reset: true)
        reach.start()
        first.driver.observeStep = { [unowned self] actions in
            for action in actions { log("target: \(action)") }
            checkPublication(actions)
        }
        for (index, host) in scenario.extraTargets.enumerated() {
            let core = TargetCore(host: host, family: scenario.family, probeSettings: Self.extraTargetSettings,
                                  seed: scenario.seed &+ UInt64(index + 1), slot: UInt16(index + 1), stride: UInt16(scenario.extraTargets.count + 1))
            extras.append(ExtraTarget(world: SimulatedTarget(simulation: self, index: index + 1, core: core),
                                      routeID: reach.addTarget(families: core.families)))
            takeExtra(index + 1, .start(checkURL: ""))
        }
        pump()
        take(.start(checkURL: scenario.checkURL ? Self.checkURL : ""))
        pump()
        let end = scenario.duration * 1_000_000
        while violations.isEmpty {
            let targetWake = first.wake
            var next = queue.nextTime ?? end
            if let check = checkArrivals.last, check < next { next = check }
            for wake in [targetWake, reach.nextWakeup] {
                if let wake, wake < next { next = wake }
            }
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
            } else if let wake = reach.nextWakeup, wake <= now {
                reach.handleTimeout(now: now)
            } else if let arrival = checkArrivals.last, arrival <= now, arrival < queue.nextTime ?? .max {
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
            if let by = resolver.defaultMustStartBy, now > by {
                violation("the default target's lookup still waits \(Double(now - by) / 1e6) ms after the lookup under way when it was asked ended")
            }
        }
        now = end
        finish()
        summary.finalStatus = state.status
        return violations
    }

    // MARK: Events

    private func handle(_ event: Event) {
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
                take(.probe(.refused(sequence: sequence, token: token, reason: reason)))
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
            take(.probe(.error(sequence: sequence, token: token, failure, from: "198.18.200.1")))
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
            take(.trafficSampled(generation: generation, sample, cost: cost))
        case .checkAnswer(let generation, let meaning):
            // A cancelled check says nothing more, as CheckRun.cancel makes sure.
            guard runningCheck?.generation == generation else { return }
            runningCheck = nil
            take(.checkAnswered(generation: generation, meaning))
        case .resolverAnswer(let index, let generation, let result, let worker):
            if worker { resolver.finished() }
            if index == 0 {
                if generation == target.monitor.generation {
                    lookupAskedAt = nil
                    if case .failure = result { lastLookupFailureAt = now }
                }
                take(.resolved(generation: generation, result, routedFamilies: routedFamilies))
            } else {
                takeExtra(index, .resolved(generation: generation, result, routedFamilies: routedFamilies))
            }
            startNextLookup()
        case .extraReply(let index, let sequence, let token):
            takeExtra(index, .probe(.reply(sequence: sequence, token: token, via: .icmp)))
        case .fault(let fault):
            apply(fault)
        }
    }

    fileprivate var routedFamilies: Set<Int32> { Set(reach.table.defaultRoutes.map { Int32($0.family) }) }

    /// An answer from the host (an echo reply, or its TCP), or one that claims to be.
    private func deliverReply(_ sequence: UInt16, _ token: UInt64, _ path: AnswerPath, fromHost: Bool) {
        // Silence that ended before this answer came first.
        noteExpiries()
        let answeredBefore = target.probe.statistics.answered
        take(.probe(.reply(sequence: sequence, token: token, via: path)))
        if target.probe.statistics.answered > answeredBefore {
            if !fromHost { violation("probe \(sequence) counted as answered though only a router spoke (its ICMP error about the TCP connection)") }
            sent[sequence]?.finished = true
            sent[sequence]?.answered = true
            newestAnsweredSentAt = max(newestAnsweredSentAt, sent[sequence]?.sentAt ?? 0)
            lastAnswerAt = now
            failureKindsSinceAnswer = []
            firstFailureSentAt = nil
            onScheduleSinceAnswer = true
            answersInRow += 1
        }
    }

    private func check() {
        summary.checks += 1
        // Pending before the probe goes out, as MonitorObject keeps it: a probe that fails at once answers it.
        let pending = (arrival: now, limit: now + 2 * UInt64(settings.timeoutMilliseconds) * 1_000_000)
        if first.driver.check() == true { pendingChecks.append(pending) }
    }

    private func apply(_ fault: Scenario.Fault) {
        switch fault {
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
            var arrivals: [UInt64] = []
            arrivals.reserveCapacity(count)
            let meanGap = UInt64(spread) * 1_000_000 / UInt64(max(count, 1))
            var at = now
            for _ in 0..<count {
                at += random.next() % (2 * meanGap + 1)
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
                let at = now + random.next() % 500_000_000
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

    // MARK: Outputs of the cores, carried out as the drivers do

    /// Hands `event` to the default target's driver, which carries out its actions at once.
    private func take(_ event: TargetCore.Event) {
        first.driver.handle(event)
    }

    /// At most one publication per step, after every action but the verdict being ready.
    private func checkPublication(_ actions: [TargetCore.Action]) {
        var publications = 0
        for index in actions.indices {
            guard case .publish = actions[index] else { continue }
            publications += 1
            let last = if case .verdictReady? = actions.last { actions.count - 2 } else { actions.count - 1 }
            if publications > 1 || index != last { violation("the state was published \(publications) times, or before the event's last action") }
        }
    }

    private func pump() {
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
        }
    }

    private func endOfTurn() {
        while evaluationDue {
            evaluationDue = false
            reach.evaluate()
            pump()
        }
    }

    // MARK: The default target's world

    fileprivate func send(sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        log("send \(sequence)\(forCheck ? " for a Check" : "") (outstanding \(target.probe.outstandingCount), next wake \(target.probe.nextWakeup.map { Double($0) / 1e6 } ?? -1))")
        summary.probesSent += 1
        stallWaitingSince = nil
        resumeWaitingSince = nil
        skippedSinceSend = false
        sent[sequence] = SentProbe(sentAt: now, deadline: now + UInt64(settings.timeoutMilliseconds) * 1_000_000, extra: extra)
        if sent.count > 4096 { sent = sent.filter { $0.value.deadline + 10_000_000_000 > now } }
        if forCheck {
            onScheduleSinceAnswer = false
            summary.forcedProbes += 1
            noteForcedProbe()
        }
        transmit(sequence, token, alsoTCP: alsoTCP)
    }

    fileprivate func watchRoute(_ address: IPAddress?, families: [Int32]) {
        routeNewsSinceCheck = true
        let changed = address != reach.target || families != reach.families
        reach.setTarget(address)
        reach.setFamilies(families)
        if changed { noteKernelTruth(reset: true) }
    }

    fileprivate func aimProbes(at address: IPAddress?) -> ProbeMethod? {
        probeTarget = address
        lastRetarget = now
        pendingChecks = []
        sent = [:]
        failureKindsSinceAnswer = []
        firstFailureSentAt = nil
        onScheduleSinceAnswer = true
        answersInRow = 0
        lastAnswerAt = now
        newestAnsweredSentAt = 0
        return scenario.probeMethod
    }

    fileprivate func publish(_ newState: (MonitorState) -> MonitorState) {
        let before = state.status
        state = newState(state)
        if state.status != before { summary.statuses.append((now, state.status, state.reason)) }
        // The rules on what was published are checked once the step's work is done.
        stateDue = true
    }

    /// On the loop a sample costs little and is handed over in the same turn, as the driver
    /// does; on the sampler's thread it costs up to a few ms and comes back later.
    fileprivate func sampleTraffic(generation: UInt64, inline: Bool) -> TrafficSampling {
        notePath()
        let sample = trafficSample()
        summary.trafficSamples += 1
        if inline {
            newSample = (now, sample.receivingRemotes > 0)
            return .now(sample, cost: 20_000 + random.next() % 200_000)
        }
        let cost = 100_000 + random.next() % 5_000_000
        queue.add(.trafficSample(generation: generation, sample, cost: cost, takenAt: now), at: now + cost)
        return .later
    }

    private func carryOut(_ output: ReachabilityCore.Output) {
        switch output {
        case .send(let request):
            kernel.answer(request, target: scenario.family == .ipv6 ? AF_INET6 : AF_INET)
            if overflowOnNextLookup, case .routeLookup = request {
                // The reader stalls just as the kernel answers: the answer is lost with the events.
                overflowOnNextLookup = false
                kernel.overflow()
            }
            scheduleKernelRead()
        case .evaluateAtEndOfTurn:
            evaluationDue = true
        case .verdict(let verdict, let id):
            if let index = extras.firstIndex(where: { $0.routeID == id }) {
                return takeExtra(index + 1, .route(verdict, routedFamilies: routedFamilies))
            }
            checkVerdictHeld(verdict, id)
            guard id == 0 else { return }
            let previous = target.monitor.route
            take(.route(verdict, routedFamilies: routedFamilies))
            // A route gained or changed probes at once: off the schedule.
            if verdict.usable, case .resolved = target.monitor.resolution,
               previous?.usable != true || previous?.interface != verdict.interface {
                onScheduleSinceAnswer = false
            }
        }
    }

    /// The check as CheckRun runs it: lookup, connect and GET, never past its limit.
    fileprivate func startCheck(_ generation: UInt64, limit: UInt64) {
        if limit != UInt64(max(5_000, settings.timeoutMilliseconds)) * 1_000_000 {
            violation("a check started with a limit of \(Double(limit) / 1e6) ms, not max(5 s, Timeout)")
        }
        runningCheck = (generation, now, limit)
        let (after, meaning): (UInt64, CheckAnswer.Meaning) = switch checkBehaviour {
        case .expected(let milliseconds): (UInt64(milliseconds) * 1_000_000, .expected)
        case .portal: (20_000_000, .portal("http://portal.test/login"))
        case .failing: (20_000_000, .failed("HTTP 500"))
        case .hanging: (limit, .failed("timed out after \(limit / 1_000_000_000) s"))
        }
        queue.add(.checkAnswer(generation: generation, meaning), at: now + min(after, limit))
    }

    private func scheduleKernelRead() {
        guard kernel.hasQueued, !kernelReadScheduled else { return }
        kernelReadScheduled = true
        queue.add(.kernelReadable, at: now + 50_000)
    }

    /// Asks the shared resolver for a name (the driver answers an address itself).
    fileprivate func resolve(_ host: String, _ generation: UInt64, for index: Int) {
        let lookup = SimulatedResolver.Lookup(target: index, host: host, generation: generation)
        if let broken = resolver.ask(lookup, targets: extras.count + 1, now: now) { violation(broken) }
        startNextLookup()
    }

    /// The resolver's thread takes the next lookup, if it is free.
    private func startNextLookup() {
        guard let (started, late) = resolver.startNext(now: now, v6: scenario.family == .ipv6, random: &random) else { return }
        if let late { violation("the default target's lookup started \(Double(late) / 1e6) ms after the lookup under way when it was asked") }
        let lookup = started.lookup
        if lookup.target == 0, lookup.generation == target.monitor.generation { lookupAskedAt = now }
        queue.add(.resolverAnswer(target: lookup.target, generation: lookup.generation, started.answer, worker: true), at: started.at)
    }

    // MARK: The extra targets, driven as the daemon drives each of its targets

    private func takeExtra(_ index: Int, _ event: TargetCore.Event) {
        extras[index - 1].world.driver.handle(event)
    }

    /// The same far hosts as the default target's; a plain echo, no ladder.
    fileprivate func sendForExtra(_ index: Int, sequence: UInt16, token: UInt64) {
        guard let address = extras[index - 1].probeAddress else { return }
        guard kernel.canSend(to: address) else {
            return takeExtra(index, .probe(.sendFailed(sequence: sequence, transient: false, reason: "cannot send to \(address): Network is unreachable")))
        }
        if kernel.delivers(to: address), case .answering(let minRTT, _, let loss) = behaviour, loss < 0.5 {
            queue.add(.extraReply(target: index, sequence: sequence, token: token), at: now + UInt64(minRTT) * 1_000_000)
        }
    }

    fileprivate func publishExtra(_ index: Int, _ newState: (MonitorState) -> MonitorState) {
        let extra = extras[index - 1]
        extra.state = newState(extra.state)
        let core = extra.core
        if case .resolved(let address) = core.monitor.resolution,
           !Self.addresses(of: core.monitor.host, v6: scenario.family == .ipv6).contains(address) {
            violation("target \(index)'s Host \(core.monitor.host) resolved to \(address), an answer for another name")
        }
    }

    /// The extra targets' states, as last published.
    public var extraStates: [MonitorState] { extras.map(\.state) }

    static func v6(_ subnet: UInt8, _ host: UInt8) -> IPAddress {
        .v6([0xfd, 0, 0, 0, 0, 0, 0, subnet, 0, 0, 0, 0, 0, 0, 0, host])
    }

    static func addresses(of host: String, v6 six: Bool) -> [IPAddress] {
        switch host {
        case "a.test": [six ? v6(0, 2) : .v4([198, 18, 0, 2])]
        case "b.test": [six ? v6(1, 2) : .v4([198, 18, 1, 2])]
        default: IPAddress(host).map { [$0] } ?? []
        }
    }

    /// The far host's answer to one probe, by the behaviour of the moment.
    private func transmit(_ sequence: UInt16, _ token: UInt64, alsoTCP: Bool) {
        guard let target = probeTarget else { return }
        let alone = scenario.probeMethod == .tcp
        if filteredSince != nil && !(kernel.canSend(to: target) && kernel.delivers(to: target)) { pathTroubleSinceFiltered = true }
        guard kernel.canSend(to: target) else {
            let inFlight = self.target.isOutstanding(sequence)
            if alone {
                // connect(2) fails at once; the driver answers from the loop, as for any outcome.
                queue.add(.tcpOutcome(sequence: sequence, token: token, .localRefusal(errno: 101), alone: true, fromHost: false), at: now)
                return
            }
            take(.probe(.sendFailed(sequence: sequence, transient: false, reason: "cannot send to \(target): Network is unreachable")))
            if inFlight {
                sent[sequence]?.finished = true
                failureKindsSinceAnswer.insert("send failed")
                answersInRow = 0
            }
            return
        }
        guard kernel.delivers(to: target) else { return }
        if alone || alsoTCP { connect(sequence, token, alone: alone) }
        guard !alone else { return }
        switch behaviour {
        case .answering(let minRTT, let maxRTT, let loss):
            guard Double(random.next() % 1000) / 1000 >= loss else { return }
            let rtt = UInt64(minRTT) * 1_000_000 + random.next() % (UInt64(max(maxRTT, minRTT) - minRTT) * 1_000_000 + 1)
            queue.add(.reply(sequence: sequence, token: token, via: .icmp), at: now + rtt)
            if random.next() % 50 == 0 { queue.add(.reply(sequence: sequence, token: token, via: .icmp), at: now + rtt + 1_000) }
        case .icmpFiltered, .silent:
            break
        case .timeExceeded:
            queue.add(.icmpError(sequence: sequence, token: token, .timeExceeded), at: now + 2_000_000)
        case .unreachable(let whole):
            queue.add(.icmpError(sequence: sequence, token: whole ? token : nil, .unreachable(code: 1)), at: now + 2_000_000)
        }
    }

    /// The probe's TCP connection to port 443 (the ladder's beside an echo request, or the probe
    /// itself), ending as the path of the moment makes it.
    private func connect(_ sequence: UInt16, _ token: UInt64, alone: Bool) {
        let routerDelay: UInt64 = 2_000_000
        let (outcome, after, fromHost): (TCPOutcome, UInt64, Bool)
        switch behaviour {
        case .answering(let minRTT, let maxRTT, let loss):
            guard Double(random.next() % 1000) / 1000 >= loss else { return }
            // Racing the echo, a little slower or faster.
            let rtt = UInt64(minRTT) * 1_000_000 + random.next() % (UInt64(max(maxRTT, minRTT) - minRTT) * 1_000_000 + 2_000_001)
            (outcome, after, fromHost) = (.accepted, rtt, true)
        case .icmpFiltered(let rtt, let path):
            switch path {
            case .accepts: (outcome, after, fromHost) = (.accepted, UInt64(rtt) * 1_000_000, true)
            case .resets: (outcome, after, fromHost) = (.reset, UInt64(rtt) * 1_000_000, true)
            // ECONNREFUSED, with the router's ICMP error in the socket's error queue.
            case .rejectedByRouter: (outcome, after, fromHost) = (.icmpError(errno: 111), routerDelay, false)
            case .dropped: return
            }
        case .silent:
            return
        // EHOSTUNREACH, with the router's ICMP error queued.
        case .timeExceeded, .unreachable:
            (outcome, after, fromHost) = (.icmpError(errno: 113), routerDelay, false)
        }
        queue.add(.tcpOutcome(sequence: sequence, token: token, outcome, alone: alone, fromHost: fromHost), at: now + after)
    }

    /// Whether the path to Host works now: a route the kernel delivers on, and a host that answers
    /// (ICMP filtered or not); when it stopped working.
    private func notePath() {
        let works: Bool
        if let target = probeTarget, kernel.canSend(to: target), kernel.delivers(to: target) {
            switch behaviour {
            case .answering(_, _, let loss): works = loss < 0.5
            case .icmpFiltered(_, let path): works = path == .accepts || path == .resets
            case .silent, .timeExceeded, .unreachable: works = false
            }
        } else {
            works = false
        }
        if works { pathDownSince = nil } else if pathDownSince == nil { pathDownSince = now }
    }

    /// What a sample of this machine's connections finds now.
    private func trafficSample() -> TrafficSample {
        var remotes: Int
        var lossy = false
        switch trafficBehaviour {
        case .none: return TrafficSample()
        case .localOnly(let connections): return TrafficSample(connections: connections)
        case .steady(let count): remotes = count
        case .lossy(let count):
            remotes = count
            lossy = true
        case .dying(let count): remotes = max(0, count - Int((now - trafficSince) / 2_000_000_000))
        }
        guard remotes > 0 else { return TrafficSample() }
        guard let down = pathDownSince else {
            return TrafficSample(connections: remotes, receivingRemotes: remotes,
                                 retransmittingRemotes: lossy ? Int(random.next() % UInt64(remotes + 1)) : 0)
        }
        let elapsed = now - down
        return TrafficSample(connections: remotes, receivingRemotes: elapsed < 1_000_000_000 ? remotes : 0,
                             retransmittingRemotes: elapsed >= 300_000_000 ? remotes : 0)
    }

    /// Traffic as evidence, by the contract: flowing traffic stands in for a probe only with Evidence
    /// `traffic` and data from a remote routed like Host within the last second; a stall sends a
    /// probe within one sample (and the per-Timeout limit on forced probes); a probe skipped for
    /// traffic goes out within one sample of traffic no longer flowing.
    private func checkTraffic() {
        defer {
            if let sample = newSample { lastSample = sample }
            newSample = nil
        }
        let skipped = target.probe.statistics.skipped
        if skipped > skippedSoFar {
            summary.probesSkipped += skipped - skippedSoFar
            skippedSoFar = skipped
            skippedSinceSend = true
            if settings.evidence != .traffic { violation("a probe was skipped with Evidence \(settings.evidence.rawValue)") }
            guard let sample = lastSample, sample.receiving, now - sample.at <= 1_000_000_000 else {
                return violation("a probe was skipped for traffic without data from a remote routed like Host within a second "
                                 + "(last sample: \(lastSample.map { "\(Double(now - $0.at) / 1e6) ms ago, receiving \($0.receiving)" } ?? "none"))")
            }
        }
        let word = target.trafficWatch.traffic
        guard word != lastTraffic || stallWaitingSince != nil || resumeWaitingSince != nil else { return }
        if word != lastTraffic {
            if word == .stalled {
                summary.stalls += 1
                if target.probe.report.answering == true, target.probe.outstandingCount == 0 { stallWaitingSince = now }
            }
            if lastTraffic == .flowing, skippedSinceSend, target.probe.report.answering == true, target.probe.outstandingCount == 0 {
                resumeWaitingSince = now
            }
            lastTraffic = word
        }
        if target.probe.report.answering != true || word == .none {
            stallWaitingSince = nil
            resumeWaitingSince = nil
        }
        let timeout = UInt64(settings.timeoutMilliseconds) * 1_000_000
        if let since = stallWaitingSince, now - since > TrafficWatch.busyPeriod + timeout, since >= lastSettingsChange {
            violation("traffic stalled \(Double(now - since) / 1e6) ms ago and no probe went out")
        }
        if let since = resumeWaitingSince, now - since > TrafficWatch.busyPeriod, since >= lastSettingsChange {
            violation("traffic stopped flowing \(Double(now - since) / 1e6) ms ago and the skipped probes did not resume")
        }
    }

    // MARK: Invariants

    private func violation(_ rule: String) {
        guard violations.isEmpty else { return }
        log("VIOLATION \(rule)")
        violations.append(Violation(seed: scenario.seed, at: now, rule: rule))
    }

    /// Probes whose deadline passed unanswered are failures the simulation counts itself.
    private func noteExpiries() {
        for (sequence, probe) in sent where !probe.finished && probe.deadline <= now {
            sent[sequence]?.finished = true
            guard probe.sentAt > newestAnsweredSentAt, !probe.extra else { continue }
            failureKindsSinceAnswer.insert("silence")
            answersInRow = 0
        }
    }

    fileprivate func checkFlip(from old: ProbeReport, to new: ProbeReport) {
        if old.answering != new.answering { noteExpiries() }
        let timeout = UInt64(settings.timeoutMilliseconds) * 1_000_000
        let interval = UInt64(settings.intervalMilliseconds) * 1_000_000
        if old.answering == true && new.answering == false {
            summary.flips += 1
            noteExpiries()
            if failureKindsSinceAnswer.isEmpty {
                violation("not answering with no failed probe since the last answer (traffic made it so by itself)")
            }
            // Consecutive failures are counted in the order probes were sent: a host that answered a
            // probe is not silent until a probe sent after that one has failed.
            if !sent.values.contains(where: { $0.finished && !$0.answered && $0.sentAt > newestAnsweredSentAt }) {
                violation("not answering, though no probe sent after the newest answered one has failed")
            }
            if let since = filteredSince, !pathTroubleSinceFiltered, settings.failureThreshold >= 2,
               failureKindsSinceAnswer == ["silence"],
               sent.values.filter({ $0.finished && !$0.answered && !$0.extra && $0.sentAt > newestAnsweredSentAt })
                   .allSatisfy({ $0.sentAt >= since }) {
                violation("not answering while ICMP was filtered and the host answered TCP within Timeout (the ladder)")
            }
            let refused = failureKindsSinceAnswer.contains("refused") || failureKindsSinceAnswer.contains("send failed")
            if !refused && target.probe.verdict.consecutiveFailures < settings.failureThreshold {
                violation("not answering after \(target.probe.verdict.consecutiveFailures) failures without a proven refusal "
                          + "(FailureThreshold \(settings.failureThreshold); failures: \(failureKindsSinceAnswer.sorted()))")
            }
            if failureKindsSinceAnswer == ["time exceeded"], onScheduleSinceAnswer,
               let first = firstFailureSentAt, first >= lastSettingsChange, first >= lastRetarget {
                // The network answered: no silence to confirm, so the next probe waits for its tick.
                let bound = UInt64(settings.failureThreshold - 1) * interval
                if now - first < bound {
                    violation("\(settings.failureThreshold) Time Exceeded answers took \(Double(now - first) / 1e6) ms, "
                              + "sooner than (FailureThreshold − 1) × Interval = \(Double(bound) / 1e6) ms")
                }
            }
            if failureKindsSinceAnswer == ["silence"] {
                // Thresholds count silence: never sooner than (F − 1) × min(Interval, Timeout) + Timeout.
                let firstSilent = sent.values.filter { !$0.answered && $0.deadline >= lastAnswerAt }
                    .map(\.sentAt).min()
                if let firstSilent, firstSilent >= lastSettingsChange, firstSilent >= lastRetarget {
                    let bound = UInt64(settings.failureThreshold - 1) * min(interval, timeout) + timeout
                    if now - firstSilent < bound {
                        violation("silence confirmed after \(Double(now - firstSilent) / 1e6) ms, sooner than \(Double(bound) / 1e6) ms "
                                  + "(Interval \(settings.intervalMilliseconds), Timeout \(settings.timeoutMilliseconds), "
                                  + "FailureThreshold \(settings.failureThreshold))")
                    }
                }
            }
        }
        if old.answering == false && new.answering == true {
            summary.flips += 1
            if answersInRow < Int(settings.recoveryThreshold) {
                violation("answering again after \(answersInRow) answers in a row (RecoveryThreshold \(settings.recoveryThreshold))")
            }
        }
    }

    private func noteForcedProbe() {
        let timeout = UInt64(settings.timeoutMilliseconds) * 1_000_000
        if let last = lastForcedAt, last >= lastSettingsChange, now - last < timeout {
            violation("Checks forced two probes \(Double(now - last) / 1e6) ms apart (Timeout \(settings.timeoutMilliseconds))")
        }
        lastForcedAt = now
    }

    fileprivate func answerChecks() {
        if let oldest = pendingChecks.first { summary.longestCheckWait = max(summary.longestCheckWait, now - oldest.arrival) }
        // Within two Timeouts. A Timeout changed while a Check waited: the probe it waits for may
        // run on either. A Check that shares a probe in flight waits for that probe's own Timeout.
        for check in pendingChecks where now > check.limit && check.arrival >= lastSettingsChange
            && !sent.values.contains(where: { $0.sentAt <= check.arrival && $0.deadline >= now }) {
            violation("a Check waited \(Double(now - check.arrival) / 1e6) ms for a verdict (allowed: \(Double(check.limit - check.arrival) / 1e6) ms)")
        }
        pendingChecks = []
    }

    private func checkResolution() {
        if case .resolved(let address) = target.monitor.resolution,
           !Self.addresses(of: target.monitor.host, v6: scenario.family == .ipv6).contains(address) {
            violation("Host \(target.monitor.host) resolved to \(address), an answer for an earlier Host")
        }
    }

    /// The check and DNS health, by the contract: a check ends within its limit, lookup included
    /// (Connectivity is not `unknown` "checking" past it); a check that failed leaves an answering
    /// host `limited`, never `none`; `limited` for a broken resolver ends within 5 s of its repair
    /// (or of the failed answer to a lookup asked before it), plus a lookup.
    private func checkBeyondTheHost() {
        if let running = runningCheck, now - running.startedAt > running.limit, state.reason.hasPrefix("checking") {
            violation("Connectivity unknown (\(state.reason)) \(Double(now - running.startedAt) / 1e6) ms into a check "
                      + "whose limit is \(Double(running.limit) / 1e6) ms")
        }
        if case .failed = target.monitor.portalCheck.meaning, target.probe.report.answering == true, target.monitor.route?.usable == true,
           case .resolved = target.monitor.resolution, state.connectivity == .none {
            violation("the check failed (\(state.reason)) and an answering host over a usable route is none")
        }
        // A lookup asked before the repair ends as it would have (a hung one at glibc's timeout): the 5 s count from its answer.
        // The reason is read last: matching text is the dearest test here.
        // A retry waiting behind another target's lookup waits for it (the rule above bounds that), then answers within 30 ms.
        if let since = resolverAnsweringSince, (lookupAskedAt ?? .max) >= since, resolver.defaultMustStartBy == nil {
            let from = max(since, lastLookupFailureAt)
            if now - from > 5_030_000_000 + 1_000_000, now - resolver.lastDefaultStart > 31_000_000,
               target.monitor.failedLookupsWhileAnswering >= MonitorCore.brokenResolverFailures, state.reason.contains("no longer resolves") {
                violation("limited by DNS \(Double(now - from) / 1e6) ms after the resolver answered again (\(state.reason))")
            }
        }
    }

    /// What a reader that missed nothing would conclude about one of the reachability core's targets now.
    private func kernelTruth(_ id: ReachabilityCore.TargetID, _ table: LinkTable) -> ReachabilityVerdict {
        let classify: (Link) -> InterfaceKind = { $0.name.hasPrefix("wlan") ? .wifi : .ethernet }
        if let target = reach.target(id) {
            return ReachabilityEvaluation.verdict(target: target, lookup: kernel.lookup(target), table: table, classify: classify)
        }
        return ReachabilityEvaluation.defaultRouteVerdict(families: reach.families(id), table: table, classify: classify)
    }

    private static func key(_ verdict: ReachabilityVerdict) -> String {
        verdict.usable ? "usable over \(verdict.interface)" : "unusable (\(verdict.interface))"
    }

    /// The kernel changed, or the core's target did: remember what is true now. A verdict may lag
    /// the kernel, but it must be something that was true at some moment for this target. On a new
    /// target, the core's own table (the kernel's at a moment before, its news still in flight) is
    /// such a moment too: a route deleted just before the new Host shows until its deletion is read.
    private func noteKernelTruth(reset: Bool) {
        if reset { truthsSinceRetarget[0] = [Self.key(kernelTruth(0, reach.table))] }
        let table = kernel.wholeTable
        for id in [0, secondTarget] { truthsSinceRetarget[id, default: []].insert(Self.key(kernelTruth(id, table))) }
    }

    private func checkVerdictHeld(_ verdict: ReachabilityVerdict, _ id: ReachabilityCore.TargetID) {
        if truthsSinceRetarget[id]?.contains(Self.key(verdict)) != true {
            violation("route verdict \(Self.key(verdict)) for target \(id): \(verdict.reason) — never true for it "
                      + "(true since: \((truthsSinceRetarget[id] ?? []).sorted()))")
        }
    }

    /// Whenever the reachability core is at rest (nothing queued, no lookup out, the table whole),
    /// each target's verdict is the one a reader that missed nothing would reach.
    private func checkKernelAgreement() {
        guard routeNewsSinceCheck, !kernel.hasQueued, !evaluationDue, reach.ready, !reach.isLookingUp else { return }
        routeNewsSinceCheck = false
        let table = kernel.wholeTable
        for id in [0, secondTarget] {
            let truth = kernelTruth(id, table)
            guard let verdict = reach.verdict(id) else {
                return violation("no route verdict for target \(id) although the kernel has said everything "
                                 + "(truth: \(truth.usable ? truth.interface : truth.reason))")
            }
            if verdict.usable != truth.usable || verdict.interface != truth.interface {
                violation("target \(id): route verdict \(verdict.usable ? "usable over \(verdict.interface)" : "unusable: \(verdict.reason)") "
                          + "but the kernel says \(truth.usable ? "usable over \(truth.interface)" : "unusable: \(truth.reason)")")
            }
        }
    }

    private func finish() {
        noteExpiries()
        for check in pendingChecks where now > check.limit && check.arrival >= lastSettingsChange {
            violation("a Check never got its verdict (arrived at \(Double(check.arrival) / 1e9) s)")
        }
        // A name with no address yet is looked up again after a backoff of up to 60 s: a failed
        // answer that came after healing (a lookup hung before it) may leave it unresolved so long.
        let backingOff = if case .failed = target.monitor.resolution { now - lastLookupFailureAt < 60_000_000_000 } else { false }
        if scenario.quietFrom != nil, quiet, violations.isEmpty, !backingOff {
            if state.status != .ethernet {
                violation("after everything healed, Status is \(state.status) (\(state.reason)), not ethernet")
            }
        }
    }
}

/// One target's world in the simulation, for the daemon's `TargetDriver`: the default target
/// (index 0) gets the whole simulated world, the extra ones a plain echo and no check.
private final class SimulatedTarget: TargetWorld {
    unowned let simulation: Simulation
    let index: Int
    private let initialCore: TargetCore
    private(set) lazy var driver = TargetDriver(core: initialCore, world: self) { IPAddress($0) }
    /// When the driver asked to be woken.
    private(set) var wake: UInt64?

    init(simulation: Simulation, index: Int, core: TargetCore) {
        self.simulation = simulation
        self.index = index
        initialCore = core
        wake = core.nextWakeup
    }

    var now: UInt64 { simulation.now }
    var routedFamilies: Set<Int32>? { simulation.routedFamilies }

    func resolve(_ host: String, family: AddressFamily, generation: UInt64) {
        simulation.resolve(host, generation, for: index)
    }

    func cancelResolutions() {
        // Answers to earlier generations under way still arrive: the core must ignore them.
        simulation.resolver.cancel(target: index)
    }

    func watchRoute(_ address: IPAddress?, families: [Int32]) {
        if index == 0 { return simulation.watchRoute(address, families: families) }
        let id = simulation.extras[index - 1].routeID
        simulation.reach.setTarget(address, for: id)
        simulation.reach.setFamilies(families, for: id)
    }

    func aimProbes(at address: IPAddress?) -> ProbeMethod? {
        if index == 0 { return simulation.aimProbes(at: address) }
        simulation.extras[index - 1].probeAddress = address
        return .icmpDatagram
    }

    func send(sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        if index == 0 { return simulation.send(sequence: sequence, token: token, forCheck: forCheck, extra: extra, alsoTCP: alsoTCP) }
        simulation.sendForExtra(index, sequence: sequence, token: token)
    }

    func startCheck(url: String, generation: UInt64, limitMilliseconds: UInt32) {
        if index == 0 { simulation.startCheck(generation, limit: UInt64(limitMilliseconds) * 1_000_000) }
    }

    func cancelCheck() {
        if index == 0 { simulation.runningCheck = nil }
    }

    func sampleTraffic(generation: UInt64, host: IPAddress, interface: String, inline: Bool) -> TrafficSampling {
        if index == 0 { return simulation.sampleTraffic(generation: generation, inline: inline) }
        return .now(TrafficSample(), cost: 20_000)
    }

    func reportChanged(old: ProbeReport, new: ProbeReport) {
        if index == 0 { simulation.reported.append(.reportChanged(old: old, new: new)) }
    }

    func publish(_ state: (MonitorState) -> MonitorState) {
        if index == 0 { simulation.publish(state) } else { simulation.publishExtra(index, state) }
    }

    func verdictReady() {
        if index == 0 { simulation.reported.append(.verdictReady) }
    }

    func wakeUp(at deadline: UInt64?) {
        wake = deadline
    }

    func settled() {}
}
