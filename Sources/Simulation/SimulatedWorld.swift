import Glibc
import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import Timekeeping

/// The simulated world every target's driver acts on, shared: the kernel's routes and the
/// reachability core that reads them, and the resolver's one thread.
extension Simulation {
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
            // One about the address the watch pointed at before (taken with the batch it moved in) is no news.
            if verdict.destination == nil || verdict.destination == askReach({ $0.target(id) })?.bytes {
                checkVerdictHeld(verdict, id)
            }
            // The service's core routes it to the path, with the view of the route's link (as the daemon's does).
            if pathsByRouteID.indices.contains(id), let path = pathsByRouteID[id] {
                service.handle(.routed(target: path.target.index, family: path.family, verdict))
            }
        case .linksChanged:
            service.handle(.kernelLinks(askReach { $0.linkNames }))
        case .nat64PrefixesChanged:
            service.handle(.routersAdvertised(nat64Prefixes: askReach { $0.nat64Prefixes }))
        }
    }

    func scheduleKernelRead() {
        guard kernel.hasQueued, !kernelReadScheduled else { return }
        kernelReadScheduled = true
        queue.add(.kernelReadable, at: now + .microseconds(50))
    }

    /// Asks the shared resolver for a name (the driver answers an address itself).
    func resolve(_ host: String, _ generation: UInt64, for index: Int) {
        let lookup = SimulatedResolver.Lookup(
            target: index, first: targets[index].lookupsFirst, host: host, generation: generation)
        if let broken = resolver.ask(lookup, targets: targets.count, now: now) { violation(broken) }
        startNextLookup()
    }

    /// The resolver's thread takes the next lookup, if it is free.
    func startNextLookup() {
        guard let (started, late) = resolver.startNext(now: now, families: families, random: &random) else {
            return
        }
        if let late {
            violation("a lookup that goes first started \(late) after the lookup under way when it was asked")
        }
        let lookup = started.lookup
        let target = targets[lookup.target]
        if lookup.generation == target.driver.core.generation { target.lookupAskedAt = now }
        queue.add(
            .resolverAnswer(target: lookup.target, generation: lookup.generation, started.answer, worker: true),
            at: started.at)
    }

    static func v6(_ subnet: UInt8, _ host: UInt8) -> IPAddress {
        .v6([0xfd, 0, 0, 0, 0, 0, 0, subnet, 0, 0, 0, 0, 0, 0, 0, host])
    }

    /// Host's addresses in `families`, in the order given (the resolver's).
    static func addresses(of host: String, families: [IPFamily]) -> [IPAddress] {
        switch host {
        case "a.test": families.map { $0 == .v6 ? v6(0, 2) : .v4([198, 18, 0, 2]) }
        case "b.test": families.map { $0 == .v6 ? v6(1, 2) : .v4([198, 18, 1, 2]) }
        default: IPAddress(host).map { families.contains($0.ipFamily) ? [$0] : [] } ?? []
        }
    }
}

/// What the world does with one path's probes, checks and samples: the far host and its answers,
/// the check server, this machine's connections routed like Host.
extension SimulatedPath {
    /// The route core's verdict for this target's route.
    func routeChanged(_ verdict: ReachabilityVerdict, link: LinkView?) {
        let previous = path.monitor.route
        take(.route(verdict, link: link))
        // A route gained or changed probes at once: off the schedule.
        if verdict.usable, case .resolved = path.monitor.resolution,
            previous?.usable != true || previous?.interface != verdict.interface
        {
            onScheduleSinceAnswer = false
        }
    }

    /// On the loop a sample costs little and is handed over in the same turn, as the driver
    /// does; on the sampler's thread it costs up to a few ms and comes back later.
    func sampleTraffic(generation: UInt64, inline: Bool) -> TrafficSampling {
        notePath()
        let sample = trafficSample()
        simulation.summary.trafficSamples += 1
        if inline {
            newSample = (now, sample.receivingRemotes > 0)
            return .now(sample, cost: .nanoseconds(20_000 + simulation.random.next() % 200_000))
        }
        let cost = Duration.nanoseconds(100_000 + simulation.random.next() % 5_000_000)
        simulation.queue.add(
            .trafficSample(target: index, family, generation: generation, sample, cost: cost, takenAt: now),
            at: now + cost)
        return .later
    }

    /// The check as CheckRun runs it: lookup, connect and GET, never past its limit.
    func startCheck(_ generation: UInt64, limit: Duration) {
        if limit != .milliseconds(max(5_000, settings.timeoutMilliseconds)) {
            violation("a check started with a limit of \(limit), not max(5 s, Timeout)")
        }
        runningCheck = (generation, now, limit)
        let scenario = simulation.scenario
        let behaviour = simulation.checkBehaviour
        // The plain and the secure fetch, each as the network treats it, combined as CheckPairRun does.
        let nonce = scenario.checkEcho ? "0123456789abcdef0123456789abcdef" : nil
        let timedOut = CheckAnswer.Meaning.failed("timed out")
        let (after, plain, secure): (Duration, CheckAnswer.Meaning, CheckAnswer.Meaning) =
            switch behaviour {
            case .expected(let milliseconds): (.milliseconds(milliseconds), .expected, .expected)
            case .portal:
                (
                    .milliseconds(20), .portal("http://portal.test/login"),
                    .failed("the server's certificate is not trusted")
                )
            case .failing: (.milliseconds(20), .failed("HTTP 500"), .failed("HTTP 500"))
            case .hanging: (limit, timedOut, timedOut)
            case .intercepted:
                (
                    .milliseconds(20), CheckAnswer(status: 204).meaning(checkURL: Simulation.checkURL, nonce: nonce),
                    .failed("the server's certificate is not trusted")
                )
            case .httpsBlocked: (limit, .expected, timedOut)
            }
        runningCheckFaked =
            (behaviour == .intercepted && scenario.checkEcho && scenario.checkURL)
            || ((behaviour == .intercepted || behaviour == .httpsBlocked) && scenario.secureCheck)
        let meaning = CheckAnswer.combine(
            plainURL: scenario.checkURL ? Simulation.checkURL : "", plain: scenario.checkURL ? plain : nil,
            secureURL: scenario.secureCheck ? Simulation.secureCheckURL : "",
            secure: scenario.secureCheck ? secure : nil)
        simulation.queue.add(
            .checkAnswer(target: index, family, generation: generation, meaning), at: now + min(after, limit))
    }

    /// The far host's answer to one probe, by the behaviour of the moment.
    func transmit(_ sequence: UInt16, _ token: UInt64, alsoTCP: Bool) {
        guard let address = probeTarget else { return }
        let alone = simulation.scenario.probeMethod == .tcp
        let carries = simulation.gateway.carries
        if filteredSince != nil
            && !(simulation.kernel.canSend(to: address) && simulation.kernel.delivers(to: address, now: now) && carries)
        {
            pathTroubleSinceFiltered = true
        }
        guard simulation.kernel.canSend(to: address) else {
            let inFlight = path.isOutstanding(sequence)
            if alone {
                // connect(2) fails at once; the driver answers from the loop, as for any outcome.
                simulation.queue.add(
                    .tcpOutcome(
                        target: index, family, sequence: sequence, token: token, .localRefusal(errno: 101),
                        alone: true, fromHost: false), at: now)
                return
            }
            take(
                .probe(
                    .sendFailed(
                        sequence: sequence, transient: false,
                        reason: "cannot send to \(address): Network is unreachable"
                    )))
            if inFlight {
                sent[sequence]?.finished = true
                failureKindsSinceAnswer.insert("send failed")
                answersInRow = 0
            }
            return
        }
        // Past the link: a gateway that forwards nothing, or a dead upstream, and nothing comes back.
        guard simulation.kernel.delivers(to: address, now: now), carries else { return }
        if alone || alsoTCP { connect(sequence, token, alone: alone) }
        guard !alone else { return }
        switch simulation.behaviour {
        case .answering(let minRTT, let maxRTT, let loss):
            guard Double(simulation.random.next() % 1000) / 1000 >= loss else { return }
            let spread = Duration.milliseconds(max(maxRTT, minRTT) - minRTT).nanoseconds + 1
            let rtt = Duration.milliseconds(minRTT) + .nanoseconds(simulation.random.next() % spread)
            simulation.queue.add(
                .reply(target: index, family, sequence: sequence, token: token, via: .icmp), at: now + rtt)
            if simulation.random.next() % 50 == 0 {
                simulation.queue.add(
                    .reply(target: index, family, sequence: sequence, token: token, via: .icmp),
                    at: now + rtt + .microseconds(1))
            }
        case .icmpFiltered, .silent:
            break
        case .timeExceeded:
            simulation.queue.add(
                .icmpError(target: index, family, sequence: sequence, token: token, .timeExceeded),
                at: now + .milliseconds(2))
        case .unreachable(let whole):
            simulation.queue.add(
                .icmpError(
                    target: index, family, sequence: sequence, token: whole ? token : nil, .unreachable(code: 1)),
                at: now + .milliseconds(2))
        }
    }

    /// The probe's TCP connection to port 443 (the ladder's beside an echo request, or the probe
    /// itself), ending as the path of the moment makes it.
    func connect(_ sequence: UInt16, _ token: UInt64, alone: Bool) {
        let routerDelay = Duration.milliseconds(2)
        let (outcome, after, fromHost): (TCPOutcome, Duration, Bool)
        switch simulation.behaviour {
        case .answering(let minRTT, let maxRTT, let loss):
            guard Double(simulation.random.next() % 1000) / 1000 >= loss else { return }
            // Racing the echo, a little slower or faster.
            let spread = Duration.milliseconds(max(maxRTT, minRTT) - minRTT + 2).nanoseconds + 1
            let rtt = Duration.milliseconds(minRTT) + .nanoseconds(simulation.random.next() % spread)
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
        simulation.queue.add(
            .tcpOutcome(
                target: index, family, sequence: sequence, token: token, outcome, alone: alone, fromHost: fromHost),
            at: now + after)
    }

    /// Whether the path to Host works now: a route the kernel delivers on, and a host that answers
    /// (ICMP filtered or not); when it stopped working.
    func notePath() {
        let works: Bool
        if let address = probeTarget, simulation.kernel.canSend(to: address),
            simulation.kernel.delivers(to: address, now: now),
            simulation.gateway.carries
        {
            switch simulation.behaviour {
            case .answering(_, _, let loss): works = loss < 0.5
            case .icmpFiltered(_, let path): works = path == .accepts || path == .resets
            case .silent, .timeExceeded, .unreachable: works = false
            }
        } else {
            works = false
        }
        if works { pathDownSince = nil } else if pathDownSince == nil { pathDownSince = now }
    }

    /// What a sample of this machine's connections routed like Host finds now.
    func trafficSample() -> TrafficSample {
        var remotes: Int
        var lossy = false
        switch simulation.trafficBehaviour {
        case .none: return TrafficSample()
        case .localOnly(let connections): return TrafficSample(connections: connections)
        case .steady(let count): remotes = count
        case .lossy(let count):
            remotes = count
            lossy = true
        case .dying(let count): remotes = max(0, count - Int((now - simulation.trafficSince) / .seconds(2)))
        }
        guard remotes > 0 else { return TrafficSample() }
        guard let down = pathDownSince else {
            return TrafficSample(
                connections: remotes, receivingRemotes: remotes,
                retransmittingRemotes: lossy ? Int(simulation.random.next() % UInt64(remotes + 1)) : 0)
        }
        let elapsed = now - down
        return TrafficSample(
            connections: remotes, receivingRemotes: elapsed < .seconds(1) ? remotes : 0,
            retransmittingRemotes: elapsed >= .milliseconds(300) ? remotes : 0)
    }
}
