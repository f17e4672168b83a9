import Glibc
import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import Timekeeping

/// The simulated world the targets' drivers act on: the far host and its answers, the
/// kernel's routes, the resolver's thread, the check of CheckURL and this machine's own traffic.
extension Simulation {
    func send(sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        log("send \(sequence)\(forCheck ? " for a Check" : "") (outstanding \(target.probe.outstandingCount), next wake \(target.probe.nextWakeup.map { "\($0.sinceOrigin)" } ?? "none"))")
        summary.probesSent += 1
        stallWaitingSince = nil
        resumeWaitingSince = nil
        skippedSinceSend = false
        sent[sequence] = SentProbe(sentAt: now, deadline: now + .milliseconds(settings.timeoutMilliseconds), extra: extra)
        if sent.count > 4096 { sent = sent.filter { $0.value.deadline + .seconds(10) > now } }
        if forCheck {
            onScheduleSinceAnswer = false
            summary.forcedProbes += 1
            noteForcedProbe()
        }
        transmit(sequence, token, alsoTCP: alsoTCP)
    }

    func watchRoute(_ address: IPAddress?, families: [IPFamily]) {
        routeNewsSinceCheck = true
        let changed = address != askReach({ $0.target(firstRoute) }) || families != askReach({ $0.families(firstRoute) })
        reach.setTarget(address, for: firstRoute)
        reach.setFamilies(families, for: firstRoute)
        if changed { noteKernelTruth(reset: true) }
    }

    func aimProbes(at address: IPAddress?) -> ProbeMethod? {
        probeTarget = address
        lastRetarget = now
        pendingChecks = []
        sent = [:]
        failureKindsSinceAnswer = []
        firstFailureSentAt = nil
        onScheduleSinceAnswer = true
        answersInRow = 0
        lastAnswerAt = now
        newestAnsweredSentAt = .origin
        return scenario.probeMethod
    }

    func publish(_ newState: (MonitorState) -> MonitorState) {
        let before = state.status
        state = newState(state)
        if state.status != before { summary.statuses.append((now, state.status, state.reason)) }
        // The rules on what was published are checked once the step's work is done.
        stateDue = true
    }

    /// On the loop a sample costs little and is handed over in the same turn, as the driver
    /// does; on the sampler's thread it costs up to a few ms and comes back later.
    func sampleTraffic(generation: UInt64, inline: Bool) -> TrafficSampling {
        notePath()
        let sample = trafficSample()
        summary.trafficSamples += 1
        if inline {
            newSample = (now, sample.receivingRemotes > 0)
            return .now(sample, cost: .nanoseconds(20_000 + random.next() % 200_000))
        }
        let cost = Duration.nanoseconds(100_000 + random.next() % 5_000_000)
        queue.add(.trafficSample(generation: generation, sample, cost: cost, takenAt: now), at: now + cost)
        return .later
    }

    func carryOut(_ output: ReachabilityCore.Output) {
        switch output {
        case .ignoredRouterOption(let why):
            // The simulated kernel passes on no router advertisements.
            violation("a router option was ignored, but none was sent: \(why)")
        case .portalAPIsChanged:
            violation("a captive-portal API was announced, but no router advertisement was sent")
        case .send(let request):
            kernel.answer(request)
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
                return takeExtra(index + 1, .route(watchedFamily, verdict))
            }
            checkVerdictHeld(verdict, id)
            guard id == firstRoute else { return }
            let previous = target.monitor.route
            take(.route(watchedFamily, verdict))
            // A route gained or changed probes at once: off the schedule.
            if verdict.usable, case .resolved = target.monitor.resolution,
               previous?.usable != true || previous?.interface != verdict.interface {
                onScheduleSinceAnswer = false
            }
        }
    }

    /// The check as CheckRun runs it: lookup, connect and GET, never past its limit.
    func startCheck(_ generation: UInt64, limit: Duration) {
        if limit != .milliseconds(max(5_000, settings.timeoutMilliseconds)) {
            violation("a check started with a limit of \(limit), not max(5 s, Timeout)")
        }
        runningCheck = (generation, now, limit)
        // The plain and the secure fetch, each as the network treats it, combined as CheckPairRun does.
        let nonce = scenario.checkEcho ? "0123456789abcdef0123456789abcdef" : nil
        let timedOut = CheckAnswer.Meaning.failed("timed out")
        let (after, plain, secure): (Duration, CheckAnswer.Meaning, CheckAnswer.Meaning) = switch checkBehaviour {
        case .expected(let milliseconds): (.milliseconds(milliseconds), .expected, .expected)
        case .portal: (.milliseconds(20), .portal("http://portal.test/login"), .failed("the server's certificate is not trusted"))
        case .failing: (.milliseconds(20), .failed("HTTP 500"), .failed("HTTP 500"))
        case .hanging: (limit, timedOut, timedOut)
        case .intercepted: (.milliseconds(20), CheckAnswer(status: 204).meaning(checkURL: Self.checkURL, nonce: nonce),
                            .failed("the server's certificate is not trusted"))
        case .httpsBlocked: (limit, .expected, timedOut)
        }
        runningCheckFaked = (checkBehaviour == .intercepted && scenario.checkEcho && scenario.checkURL)
            || ((checkBehaviour == .intercepted || checkBehaviour == .httpsBlocked) && scenario.secureCheck)
        let meaning = CheckAnswer.combine(plainURL: scenario.checkURL ? Self.checkURL : "", plain: scenario.checkURL ? plain : nil,
                                          secureURL: scenario.secureCheck ? Self.secureCheckURL : "",
                                          secure: scenario.secureCheck ? secure : nil)
        queue.add(.checkAnswer(generation: generation, meaning), at: now + min(after, limit))
    }

    func scheduleKernelRead() {
        guard kernel.hasQueued, !kernelReadScheduled else { return }
        kernelReadScheduled = true
        queue.add(.kernelReadable, at: now + .microseconds(50))
    }

    /// Asks the shared resolver for a name (the driver answers an address itself).
    func resolve(_ host: String, _ generation: UInt64, for index: Int) {
        let lookup = SimulatedResolver.Lookup(target: index, host: host, generation: generation)
        if let broken = resolver.ask(lookup, targets: extras.count + 1, now: now) { violation(broken) }
        startNextLookup()
    }

    /// The resolver's thread takes the next lookup, if it is free.
    func startNextLookup() {
        guard let (started, late) = resolver.startNext(now: now, v6: scenario.family == .ipv6, random: &random) else { return }
        if let late { violation("the default target's lookup started \(late) after the lookup under way when it was asked") }
        let lookup = started.lookup
        if lookup.target == 0, lookup.generation == first.driver.core.generation { lookupAskedAt = now }
        queue.add(.resolverAnswer(target: lookup.target, generation: lookup.generation, started.answer, worker: true), at: started.at)
    }

    func takeExtra(_ index: Int, _ event: TargetCore.Event) {
        extras[index - 1].world.driver.handle(event)
    }

    /// The same far hosts as the default target's; a plain echo, no ladder.
    func sendForExtra(_ index: Int, sequence: UInt16, token: UInt64) {
        guard let address = extras[index - 1].probeAddress else { return }
        guard kernel.canSend(to: address) else {
            return takeExtra(index, .probe(watchedFamily, .sendFailed(sequence: sequence, transient: false, reason: "cannot send to \(address): Network is unreachable")))
        }
        if kernel.delivers(to: address), gateway.carries, case .answering(let minRTT, _, let loss) = behaviour, loss < 0.5 {
            queue.add(.extraReply(target: index, sequence: sequence, token: token), at: now + .milliseconds(minRTT))
        }
    }

    func publishExtra(_ index: Int, _ newState: (MonitorState) -> MonitorState) {
        let extra = extras[index - 1]
        extra.state = newState(extra.state)
        let path = extra.world.driver.path(watchedFamily)
        if case .resolved(let address) = path.pointee.monitor.resolution {
            let host = path.pointee.monitor.host
            if !Self.addresses(of: host, v6: scenario.family == .ipv6).contains(address) {
                violation("target \(index)'s Host \(host) resolved to \(address), an answer for another name")
            }
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
    func transmit(_ sequence: UInt16, _ token: UInt64, alsoTCP: Bool) {
        guard let target = probeTarget else { return }
        let alone = scenario.probeMethod == .tcp
        if filteredSince != nil && !(kernel.canSend(to: target) && kernel.delivers(to: target) && gateway.carries) {
            pathTroubleSinceFiltered = true
        }
        guard kernel.canSend(to: target) else {
            let inFlight = self.target.isOutstanding(sequence)
            if alone {
                // connect(2) fails at once; the driver answers from the loop, as for any outcome.
                queue.add(.tcpOutcome(sequence: sequence, token: token, .localRefusal(errno: 101), alone: true, fromHost: false), at: now)
                return
            }
            take(.probe(watchedFamily, .sendFailed(sequence: sequence, transient: false, reason: "cannot send to \(target): Network is unreachable")))
            if inFlight {
                sent[sequence]?.finished = true
                failureKindsSinceAnswer.insert("send failed")
                answersInRow = 0
            }
            return
        }
        // Past the link: a gateway that forwards nothing, or a dead upstream, and nothing comes back.
        guard kernel.delivers(to: target), gateway.carries else { return }
        if alone || alsoTCP { connect(sequence, token, alone: alone) }
        guard !alone else { return }
        switch behaviour {
        case .answering(let minRTT, let maxRTT, let loss):
            guard Double(random.next() % 1000) / 1000 >= loss else { return }
            let rtt = Duration.milliseconds(minRTT) + .nanoseconds(random.next() % (Duration.milliseconds(max(maxRTT, minRTT) - minRTT).nanoseconds + 1))
            queue.add(.reply(sequence: sequence, token: token, via: .icmp), at: now + rtt)
            if random.next() % 50 == 0 { queue.add(.reply(sequence: sequence, token: token, via: .icmp), at: now + rtt + .microseconds(1)) }
        case .icmpFiltered, .silent:
            break
        case .timeExceeded:
            queue.add(.icmpError(sequence: sequence, token: token, .timeExceeded), at: now + .milliseconds(2))
        case .unreachable(let whole):
            queue.add(.icmpError(sequence: sequence, token: whole ? token : nil, .unreachable(code: 1)), at: now + .milliseconds(2))
        }
    }

    /// The probe's TCP connection to port 443 (the ladder's beside an echo request, or the probe
    /// itself), ending as the path of the moment makes it.
    func connect(_ sequence: UInt16, _ token: UInt64, alone: Bool) {
        let routerDelay = Duration.milliseconds(2)
        let (outcome, after, fromHost): (TCPOutcome, Duration, Bool)
        switch behaviour {
        case .answering(let minRTT, let maxRTT, let loss):
            guard Double(random.next() % 1000) / 1000 >= loss else { return }
            // Racing the echo, a little slower or faster.
            let rtt = Duration.milliseconds(minRTT) + .nanoseconds(random.next() % (Duration.milliseconds(max(maxRTT, minRTT) - minRTT + 2).nanoseconds + 1))
            (outcome, after, fromHost) = (.accepted, rtt, true)
        case .icmpFiltered(let rtt, let path):
            switch path {
            case .accepts: (outcome, after, fromHost) = (.accepted, .milliseconds(rtt), true)
            case .resets: (outcome, after, fromHost) = (.reset, .milliseconds(rtt), true)
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
    func notePath() {
        let works: Bool
        if let target = probeTarget, kernel.canSend(to: target), kernel.delivers(to: target), gateway.carries {
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
    func trafficSample() -> TrafficSample {
        var remotes: Int
        var lossy = false
        switch trafficBehaviour {
        case .none: return TrafficSample()
        case .localOnly(let connections): return TrafficSample(connections: connections)
        case .steady(let count): remotes = count
        case .lossy(let count):
            remotes = count
            lossy = true
        case .dying(let count): remotes = max(0, count - Int((now - trafficSince) / .seconds(2)))
        }
        guard remotes > 0 else { return TrafficSample() }
        guard let down = pathDownSince else {
            return TrafficSample(connections: remotes, receivingRemotes: remotes,
                                 retransmittingRemotes: lossy ? Int(random.next() % UInt64(remotes + 1)) : 0)
        }
        let elapsed = now - down
        return TrafficSample(connections: remotes, receivingRemotes: elapsed < .seconds(1) ? remotes : 0,
                             retransmittingRemotes: elapsed >= .milliseconds(300) ? remotes : 0)
    }
}

/// One target's world in the simulation, for the daemon's `TargetDriver`: the default target
/// (index 0) gets the whole simulated world, the extra ones a plain echo and no check.
final class SimulatedTarget: TargetWorld {
    unowned let simulation: Simulation
    let index: Int
    let initialCore: TargetCore
    lazy var driver = TargetDriver(core: initialCore, world: self) { IPAddress($0) }
    /// When the driver asked to be woken.
    private(set) var wake: Instant?

    init(simulation: Simulation, index: Int, core: TargetCore) {
        self.simulation = simulation
        self.index = index
        initialCore = core
        wake = core.nextWakeup
    }

    var now: Instant { simulation.now }
    var routedFamilies: Set<IPFamily>? { simulation.routedFamilies }

    func resolve(_ host: String, family: AddressFamily, generation: UInt64) {
        simulation.resolve(host, generation, for: index)
    }

    /// The simulated networks have IPv4 routes: the core never needs to discover a NAT64 prefix.
    func resolveNat64(generation: UInt64) {
        simulation.violation("target \(index) looked for a NAT64 prefix on a network with IPv4 routes")
    }

    func cancelResolutions() {
        // Answers to earlier generations under way still arrive: the core must ignore them.
        simulation.resolver.cancel(target: index)
    }

    /// A family the scenario does not watch gets nothing but being let go of.
    private func watched(_ family: IPFamily, _ what: String) -> Bool {
        if family == simulation.watchedFamily { return true }
        simulation.violation("target \(index) was asked to \(what) in \(family), which AddressFamily does not watch")
        return false
    }

    func watchRoute(_ family: IPFamily, _ address: IPAddress?) {
        guard family == simulation.watchedFamily else {
            if address != nil { simulation.violation("target \(index) watched a route in \(family), which AddressFamily does not watch") }
            return
        }
        if index == 0 { return simulation.watchRoute(address, families: [family]) }
        let id = simulation.extras[index - 1].routeID
        simulation.reach.setTarget(address, for: id)
        simulation.reach.setFamilies([family], for: id)
    }

    func aimProbes(_ family: IPFamily, at address: IPAddress?) -> ProbeMethod? {
        guard family == simulation.watchedFamily else {
            if address != nil { simulation.violation("target \(index) aimed probes in \(family), which AddressFamily does not watch") }
            return nil
        }
        if index == 0 { return simulation.aimProbes(at: address) }
        simulation.extras[index - 1].probeAddress = address
        return .icmpDatagram
    }

    func send(_ family: IPFamily, sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
        guard watched(family, "send") else { return }
        if index == 0 { return simulation.send(sequence: sequence, token: token, forCheck: forCheck, extra: extra, alsoTCP: alsoTCP) }
        simulation.sendForExtra(index, sequence: sequence, token: token)
    }

    func startCheck(_ family: IPFamily, url: String, generation: UInt64, limitMilliseconds: UInt32) {
        guard watched(family, "check") else { return }
        if index == 0 { simulation.startCheck(generation, limit: .milliseconds(limitMilliseconds)) }
    }

    func cancelCheck(_ family: IPFamily) {
        if index == 0, family == simulation.watchedFamily { simulation.runningCheck = nil }
    }

    func sampleTraffic(_ family: IPFamily, generation: UInt64, host: IPAddress, interface: String, inline: Bool) -> TrafficSampling {
        guard watched(family, "sample traffic") else { return .now(nil, cost: .zero) }
        if index == 0 { return simulation.sampleTraffic(generation: generation, inline: inline) }
        return .now(TrafficSample(), cost: .microseconds(20))
    }

    func reportChanged(_ family: IPFamily, old: ProbeReport, new: ProbeReport) {
        if index == 0 { simulation.reported.append(.reportChanged(old: old, new: new)) }
    }

    func checkNeighbor(_ family: IPFamily, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64) {
        guard watched(family, "ask a next hop") else { return }
        if Simulation.gatewayAddress(interfaceIndex, v6: family == .v6) != gateway {
            simulation.violation("target \(index) asked \(gateway), which is not interface \(interfaceIndex)'s next hop")
        }
        simulation.checkNeighbor(for: index, family, gateway: gateway, generation: generation)
    }

    func probeBeyond(_ family: IPFamily, host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64) {
        guard watched(family, "probe past the gateway") else { return }
        if hops != 2 { simulation.violation("target \(index) probed past the gateway with TTL \(hops), not 2") }
        simulation.probeBeyond(for: index, family, generation: generation)
    }

    func publish(_ state: (MonitorState) -> MonitorState) {
        if index == 0 { simulation.publish(state) } else { simulation.publishExtra(index, state) }
    }

    func verdictReady() {
        if index == 0 { simulation.reported.append(.verdictReady) }
    }

    func wakeUp(at deadline: Instant?) {
        wake = deadline
    }

    func settled() {}
}
