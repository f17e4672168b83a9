import Glibc
import MonitorRules
import NetCore
import ProbeRules
import ReachabilityRules
import Timekeeping

/// INTERFACE.md's rules for each path, checked after every step against what the simulation
/// kept itself (never what the cores say of themselves).
extension SimulatedPath {
    /// The Connectivity the pace across families reads (found without text) is the one the path's
    /// state says, after every step.
    func checkTextlessConnectivity() {
        let textless = path.connectivity
        let stated = path.state(previous: MonitorState()).connectivity
        if textless != stated {
            violation("the path's Connectivity without text is \(textless), but its state says \(stated)")
        }
    }

    /// Traffic as evidence, by the contract: flowing traffic stands in for a probe only with Evidence
    /// `traffic` and data from a remote routed like Host within the last second; a stall sends a
    /// probe within one sample (and the per-Timeout limit on forced probes); a probe skipped for
    /// traffic goes out within one sample of traffic no longer flowing.
    func checkTraffic() {
        defer {
            if let sample = newSample { lastSample = sample }
            newSample = nil
        }
        // A path turning calm owes no probe skipped before (only the calm schedule's own skipped probe is owed).
        if path.probe.isCalm, !calmAtLastStep {
            skippedSinceSend = false
            resumeWaitingSince = nil
        }
        let skipped = path.probe.statistics.skipped
        if skipped > skippedSoFar {
            simulation.summary.probesSkipped += skipped - skippedSoFar
            skippedSoFar = skipped
            skippedSinceSend = true
            if settings.evidence != .traffic {
                violation("a probe was skipped with Evidence \(settings.evidence.rawValue)")
            }
            guard let sample = lastSample, sample.receiving, now - sample.at <= .seconds(1) else {
                return violation(
                    "a probe was skipped for traffic without data from a remote routed like Host within a second "
                        + "(last sample: \(lastSample.map { "\(now - $0.at) ago, receiving \($0.receiving)" } ?? "none"))"
                )
            }
        }
        let word = path.trafficWatch.traffic
        guard word != lastTraffic || stallWaitingSince != nil || resumeWaitingSince != nil else { return }
        if word != lastTraffic {
            if word == .stalled {
                simulation.summary.stalls += 1
                if path.probe.report.answering == true, path.probe.outstandingCount == 0 { stallWaitingSince = now }
            }
            if lastTraffic == .flowing, skippedSinceSend, path.probe.report.answering == true,
                path.probe.outstandingCount == 0
            {
                resumeWaitingSince = now
            }
            lastTraffic = word
        }
        // Asleep nothing is sent, whatever traffic says (logind said so; the probes start again on resume).
        if path.probe.report.answering != true || word == .none || path.probe.asleep {
            stallWaitingSince = nil
            resumeWaitingSince = nil
        }
        let timeout = Duration.milliseconds(settings.timeoutMilliseconds)
        if let since = stallWaitingSince, now - since > TrafficWatch.busyPeriod + timeout, since >= lastSettingsChange {
            violation("traffic stalled \(now - since) ago and no probe went out")
        }
        if let since = resumeWaitingSince, now - since > TrafficWatch.busyPeriod, since >= lastSettingsChange {
            violation("traffic stopped flowing \(now - since) ago and the skipped probes did not resume")
        }
    }

    /// Probes whose deadline passed unanswered are failures the simulation counts itself.
    func noteExpiries() {
        for (sequence, probe) in sent where !probe.finished && probe.deadline <= now {
            sent[sequence]?.finished = true
            guard probe.sentAt > newestAnsweredSentAt, !probe.extra else { continue }
            failureKindsSinceAnswer.insert(probe.unproven ?? "silence")
            answersInRow = 0
        }
    }

    func checkFlip(from old: ProbeReport, to new: ProbeReport) {
        if old.answering != new.answering { noteExpiries() }
        let timeout = Duration.milliseconds(settings.timeoutMilliseconds)
        let interval = Duration.milliseconds(settings.intervalMilliseconds)
        if old.answering == true && new.answering == false {
            simulation.summary.flips += 1
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
                    .allSatisfy({ $0.sentAt >= since })
            {
                violation("not answering while ICMP was filtered and the host answered TCP within Timeout (the ladder)")
            }
            let refused = failureKindsSinceAnswer.contains("refused") || failureKindsSinceAnswer.contains("send failed")
            if !refused && path.probe.verdict.consecutiveFailures < settings.failureThreshold {
                violation(
                    "not answering after \(path.probe.verdict.consecutiveFailures) failures without a proven refusal "
                        + "(FailureThreshold \(settings.failureThreshold); failures: \(failureKindsSinceAnswer.sorted()))"
                )
            }
            // On a dual-stack network the other families' probes sent at the headline's suspicion count toward the
            // same outage (INTERFACE.md "Every path"), which these bounds, counted probe by probe in one family, do
            // not follow: there each family's own count is only known to reach one.
            let ownCount = target.paths.count > 1 ? 1 : UInt64(settings.failureThreshold)
            if failureKindsSinceAnswer == ["time exceeded"], onScheduleSinceAnswer,
                let first = firstFailureSentAt, first >= lastSettingsChange, first >= lastRetarget
            {
                // The network answered: no silence to confirm, so the next probe waits for its tick.
                let bound = (ownCount - 1) * interval
                if now - first < bound {
                    violation(
                        "\(settings.failureThreshold) Time Exceeded answers took \(now - first), "
                            + "sooner than (FailureThreshold − 1) × Interval = \(bound)")
                }
            }
            if failureKindsSinceAnswer == ["silence"] {
                // Thresholds count silence: never sooner than (F − 1) × min(Interval, Timeout) + Timeout.
                let firstSilent = firstSilentSentAt
                if let firstSilent, firstSilent >= lastSettingsChange, firstSilent >= lastRetarget {
                    let bound = (ownCount - 1) * min(interval, timeout) + timeout
                    if now - firstSilent < bound {
                        violation(
                            "silence confirmed after \(now - firstSilent), sooner than \(bound) "
                                + "(Interval \(settings.intervalMilliseconds), Timeout \(settings.timeoutMilliseconds), "
                                + "FailureThreshold \(settings.failureThreshold))")
                    }
                }
            }
        }
        if old.answering == false && new.answering == true {
            simulation.summary.flips += 1
            if answersInRow < Int(settings.recoveryThreshold) {
                violation(
                    "answering again after \(answersInRow) answers in a row (RecoveryThreshold \(settings.recoveryThreshold))"
                )
            }
        }
    }

    /// When this path's first unanswered probe since its last answer was sent.
    var firstSilentSentAt: Instant? {
        sent.values.filter { !$0.answered && $0.deadline >= lastAnswerAt }.map(\.sentAt).min()
    }

    func noteForcedProbe() {
        let timeout = Duration.milliseconds(settings.timeoutMilliseconds)
        if let last = lastForcedAt, last >= lastSettingsChange, now - last < timeout {
            violation("Checks forced two probes \(now - last) apart (Timeout \(settings.timeoutMilliseconds))")
        }
        lastForcedAt = now
    }

    func checkResolution() {
        guard case .resolved(let address) = path.monitor.resolution else { return }
        let host = path.monitor.host
        if target.hostAddresses.host != host {
            target.hostAddresses = (host, Simulation.addresses(of: host, families: simulation.families))
        }
        if !target.hostAddresses.addresses.contains(address) {
            violation("Host \(host) resolved to \(address), an answer for an earlier Host")
        }
    }

    /// The check, by the contract, in this path's family: a check ends within its limit, lookup included
    /// (Connectivity is not `unknown` "checking" past it); no answer without the echo is `full`; a check that
    /// failed leaves an answering host `limited`, never `none`.
    func checkBeyondTheHost() {
        if let running = runningCheck, now - running.startedAt > running.limit, shownReason.hasPrefix("checking") {
            violation(
                "Connectivity unknown (\(shownReason)) \(now - running.startedAt) into a check "
                    + "whose limit is \(running.limit)")
        }
        // With the echo, no answer without it is full; a secure check that fails never leaves full.
        if heldCheckFaked, path.monitor.portalCheck.meaning != nil, shownConnectivity == .full {
            violation(
                "full (\(shownReason)) on a check answered by a middlebox or with HTTPS blocked "
                    + "(echo \(simulation.scenario.checkEcho), secure check \(simulation.scenario.secureCheck))")
        }
        if case .failed = path.monitor.portalCheck.meaning, path.probe.report.answering == true,
            path.monitor.route?.usable == true,
            case .resolved = path.monitor.resolution, shownConnectivity == .none
        {
            violation("the check failed (\(shownReason)) and an answering host over a usable route is none")
        }
    }

}

/// INTERFACE.md's rules for each target as a whole (its Checks, its headline), after every step.
extension SimulatedTarget {
    /// The rules checked after every step, whatever it was (`textless`: also Connectivity found without text).
    func checkStep(textless: Bool) {
        if textless {
            let computed = driver.ask { $0.state(previous: state) }.connectivity
            let textless = driver.ask { $0.connectivity }
            if textless != computed { violation("the target's Connectivity is \(computed), without text \(textless)") }
        }
        for path in paths {
            if textless { path.checkTextlessConnectivity() }
            path.checkTraffic()
            path.checkSuspicionEndsCalm()
        }
        checkBlameLate()
    }

    /// What NetworkManager says of a link (wlan0 metered) reaches exactly the targets routed over it: the service's
    /// core routes each link's view with the verdicts that route a path there.
    func checkLinkFacts() {
        let metered = simulation.service.servicesSaid && state.interface == "wlan0"
        guard state.metered != metered else { return }
        violation("Metered is \(state.metered) on \(state.interface.isEmpty ? "no interface" : state.interface)")
    }

    func answerChecks() {
        if let oldest = pendingChecks.first {
            simulation.summary.longestCheckWait = max(simulation.summary.longestCheckWait, now - oldest.arrival)
        }
        // Within two Timeouts. A Timeout changed while a Check waited: the probe it waits for may
        // run on either. A Check that shares a probe in flight waits for that probe's own Timeout.
        for check in pendingChecks
        where now > check.limit && check.arrival >= lastSettingsChange
            && !paths.contains(where: { path in
                path.sent.values.contains(where: { $0.sentAt <= check.arrival && $0.deadline >= now })
            })
        {
            violation("a Check waited \(now - check.arrival) for a verdict (allowed: \(check.limit - check.arrival))")
        }
        pendingChecks = []
    }

    func finish() {
        for path in paths { path.noteExpiries() }
        checkTimeInState()
        for check in pendingChecks where now > check.limit && check.arrival >= lastSettingsChange {
            violation("a Check never got its verdict (arrived at \(check.arrival.sinceOrigin))")
        }
        // A name with no address yet is looked up again after a backoff of up to 60 s: a failed
        // answer that came after healing (a lookup hung before it) may leave it unresolved so long.
        let backingOff =
            paths.contains { if case .failed = $0.path.monitor.resolution { true } else { false } }
            && now - lastLookupFailureAt < .seconds(60)
        // A Host with no address (hang.test, fail.test) never gets one. A target whose lookups do not go first
        // may still wait behind other targets' lookups that hang, 5 to 10 s each (INTERFACE.md promises the default only).
        let host = paths.first?.path.monitor.host ?? ""
        let resolves = !Simulation.addresses(of: host, families: simulation.families).isEmpty
        let behindHungLookups =
            !lookupsFirst && simulation.targets.contains { $0.paths.first?.path.monitor.host == "hang.test" }
        if simulation.scenario.quietFrom != nil, simulation.quiet, simulation.violations.isEmpty, resolves, !backingOff,
            !behindHungLookups
        {
            if state.status != .ethernet {
                violation("after everything healed, Status is \(state.status) (\(state.reason)), not ethernet")
            }
        }
    }

    /// The portal API and DNS health, by the contract, over the target's state (see `SimulatedPath.checkBeyondTheHost`
    /// for the check's rules, per family): a portal at the API's URL only on its captive answer, and a captive answer
    /// always the verdict; `limited` for a broken resolver ending within 5 s of its repair (or of the failed answer to a
    /// lookup asked before it), plus a lookup.
    func checkBeyondTheHost() {
        // A portal from the API only when the API said captive (never from a malformed or missing answer).
        if state.connectivity == .portal, state.portalURL == Simulation.apiPortalURL,
            simulation.apiAnswers[state.interface] != true
        {
            violation(
                "a portal at the API's URL on \(state.interface), but its API's last answer taken was not captive")
        }
        // The API saying captive is the verdict (none aside).
        if simulation.service.driver.ask({ $0.portalAPIAnswer(on: state.interface) })?.captive == true,
            paths.contains(where: { $0.path.monitor.route?.usable == true }),
            state.connectivity != .portal, state.connectivity != .none
        {
            violation("the API on \(state.interface) says captive, but Connectivity is \(state.connectivity)")
        }
        // A lookup asked before the repair ends as it would have (a hung one at glibc's timeout): the 5 s count from its answer.
        // The reason is read last: matching text is the dearest test here.
        // A retry waiting behind another target's lookup waits for it (the rule above bounds that), then answers within 30 ms.
        // Only a target whose lookups go first is bounded so: the others' retries may wait behind any lookup.
        if lookupsFirst, let since = simulation.resolverAnsweringSince, (lookupAskedAt ?? .distantFuture) >= since,
            simulation.resolver.firstMustStartBy == nil
        {
            let from = max(since, lastLookupFailureAt)
            if now - from > .milliseconds(5_031), now - simulation.resolver.lastFirstStart > .milliseconds(31),
                paths.contains(where: {
                    $0.path.monitor.failedLookupsWhileAnswering >= MonitorCore.brokenResolverFailures
                }),
                state.reason.contains("no longer resolves")
            {
                violation("limited by DNS \(now - from) after the resolver answered again (\(state.reason))")
            }
        }
    }

    /// Dual stack (INTERFACE.md "Every path"): the families' first probes go out together, unless a fault
    /// came between them.
    func checkFirstProbesTogether() {
        guard paths.count > 1, simulation.faultsApplied == 0 else { return }
        let firsts = paths.compactMap(\.firstSendAt)
        guard firsts.count == paths.count, let earliest = firsts.min(), let latest = firsts.max() else { return }
        if latest != earliest { violation("the families' first probes went out \(latest - earliest) apart") }
    }

    /// Dual stack, once the route core agrees with the kernel: the prefix published is the one the routers
    /// advertise on IPv6's route; while IPv4 has no route and the prefix is there, IPv4's probes go to the
    /// address synthesized in it, otherwise to IPv4's own.
    func checkNat64() {
        guard paths.count > 1, let v4 = path(.v4), let v6 = path(.v6) else { return }
        let kernel = simulation.kernel
        guard let route = v6.path.monitor.route, route.usable else { return }
        // The router's lifetime and the core's differ by the moment the advertisement was read.
        if let ends = kernel.advertisementEnds(onInterfaceNamed: route.interface),
            ends > now ? ends - now < .milliseconds(1) : now - ends < .milliseconds(1)
        {
            return
        }
        if kernel.routerWordEnding(onInterfaceNamed: route.interface, now: now) { return }
        let advertised = kernel.advertisedPrefix(onInterfaceNamed: route.interface, now: now)
        let expected = advertised.map { "\($0)" } ?? ""
        if state.nat64Prefix != expected {
            violation(
                "Nat64Prefix '\(state.nat64Prefix)' while the router of \(route.interface) advertised '\(expected)'")
        }
        guard case .resolved(let resolved) = v4.path.monitor.resolution, resolved.ipFamily == .v4,
            let aimed = v4.probeTarget
        else { return }
        let throughNat64 = !kernel.routes(.v4) && advertised != nil
        let wanted = throughNat64 ? SimulatedKernel.nat64Prefix.synthesize(resolved) : resolved
        if aimed != wanted { violation("IPv4 probes go to \(aimed), not \(wanted.map { "\($0)" } ?? "-")") }
    }

    private static func rank(_ connectivity: Connectivity) -> Int {
        switch connectivity {
        case .full: 3
        case .portal: 2
        case .limited: 1
        case .none, .unknown: 0
        }
    }

    /// Dual stack: the headline is never below the best family, is full whenever one family is, and waits
    /// (unknown) only while some family has no verdict; the headline's figures counted.
    func checkHeadline() {
        guard paths.count > 1 else { return }
        let families = [state.ipv4.connectivity, state.ipv6.connectivity]
        if families.contains(.full) && state.connectivity != .full {
            violation("a family is full but Connectivity is \(state.connectivity)")
        }
        if state.connectivity == .unknown {
            if !families.contains(.unknown) {
                violation("Connectivity unknown while every family has a verdict: \(families)")
            }
        } else if let best = families.map(Self.rank).max(), Self.rank(state.connectivity) < best {
            violation("Connectivity \(state.connectivity) below the best family: \(families)")
        }
        headline.note(state, now: now, last: lastPublished)
        lastPublished = (state.status, state.connectivity)
    }
}

/// The rules of the shared parts: the route verdicts against the kernel's truth.
extension Simulation {
    func violation(_ rule: String) {
        guard violations.isEmpty else { return }
        log("VIOLATION \(rule)")
        violations.append(Violation(seed: scenario.seed, at: now, rule: rule))
    }

    /// What a reader that missed nothing would conclude about one of the reachability core's targets now.
    func kernelTruth(_ id: ReachabilityCore.TargetID, _ table: LinkTable) -> ReachabilityVerdict {
        let classify: (Link) -> InterfaceKind = { $0.name.hasPrefix("wlan") ? .wifi : .ethernet }
        if let target = askReach({ $0.target(id) }) {
            return ReachabilityEvaluation.verdict(
                target: target, lookup: kernel.lookup(target), table: table, classify: classify)
        }
        return ReachabilityEvaluation.defaultRouteVerdict(
            families: askReach({ $0.families(id) }), table: table, classify: classify)
    }

    static func key(_ verdict: ReachabilityVerdict) -> String {
        verdict.usable ? "usable over \(verdict.interface)" : "unusable (\(verdict.interface))"
    }

    /// The kernel changed, or the core's target did: remember what is true now. A verdict may lag
    /// the kernel, but it must be something that was true at some moment for this target. On a new
    /// target, the core's own table (the kernel's at a moment before, its news still in flight) is
    /// such a moment too: a route deleted just before the new Host shows until its deletion is read.
    func noteKernelTruth(resetting retargeted: ReachabilityCore.TargetID? = nil) {
        if let retargeted { truthsSinceRetarget[retargeted] = [Self.key(kernelTruth(retargeted, reach.table))] }
        let table = kernel.wholeTable
        for id in watches { truthsSinceRetarget[id, default: []].insert(Self.key(kernelTruth(id, table))) }
    }

    func checkVerdictHeld(_ verdict: ReachabilityVerdict, _ id: ReachabilityCore.TargetID) {
        if truthsSinceRetarget[id]?.contains(Self.key(verdict)) != true {
            violation(
                "route verdict \(Self.key(verdict)) for target \(id): \(verdict.reason) — never true for it "
                    + "(true since: \((truthsSinceRetarget[id] ?? []).sorted()))")
        }
    }

    /// Whenever the reachability core is at rest (nothing queued, no lookup out, the table whole),
    /// each target's verdict is the one a reader that missed nothing would reach.
    func checkKernelAgreement() {
        guard routeNewsSinceCheck, !kernel.hasQueued, !evaluationDue, reach.ready, !reach.isLookingUp else { return }
        routeNewsSinceCheck = false
        let table = kernel.wholeTable
        for id in watches {
            let truth = kernelTruth(id, table)
            guard let verdict = askReach({ $0.verdict(id) }) else {
                return violation(
                    "no route verdict for target \(id) although the kernel has said everything "
                        + "(truth: \(truth.usable ? truth.interface : truth.reason))")
            }
            if verdict.usable != truth.usable || verdict.interface != truth.interface {
                violation(
                    "target \(id): route verdict \(verdict.usable ? "usable over \(verdict.interface)" : "unusable: \(verdict.reason)") "
                        + "but the kernel says \(truth.usable ? "usable over \(truth.interface)" : "unusable: \(truth.reason)")"
                )
            }
        }
        // What is published while the first verdicts wait for the services came before them (see `pump`).
        guard service.firstVerdictsHeldSince == nil else { return }
        for target in targets { target.checkNat64() }
    }

}

/// INTERFACE.md "Quiet by default", as the simulation holds every `adaptive` path to it: no probe goes out while calm
/// but once per calm period (a Check's, or an extra one beside a probe in flight, aside), and a suspicion that
/// ends calm brings the Interval back at once. Under `steady` a path is never calm, and neither rule has anything
/// to hold.
extension SimulatedPath {
    // The probe core is read in place (`path.probe.…`): a copy of it at every step cost a sixth of the run.
    func checkCalmCadence(forCheck: Bool, extra: Bool) {
        guard !extra else { return }
        defer { lastProbeSentAt = now }
        // Calm when the step began and still calm: the calm schedule's own probe (calm only after it, it went out at
        // the Interval; unsure after it, a suspicion sent it).
        guard !forCheck, calmAtLastStep, path.probe.isCalm, let previous = lastProbeSentAt,
            now - previous < path.probe.calmPeriod
        else { return }
        violation(
            "a probe went out \(now - previous) after the one before while calm (calm period \(path.probe.calmPeriod))")
    }

    func checkSuspicionEndsCalm() {
        let calm = path.probe.isCalm
        defer { calmAtLastStep = calm }
        if calm != calmAtLastStep {
            log(
                "\(calm ? "calm" : "unsure"), next probe at \(path.probe.nextScheduledProbe.map { "\($0.sinceOrigin)" } ?? "none")"
            )
        }
        guard calmAtLastStep, !calm, path.probe.suspicionOpen, path.probe.verdict.answering == true,
            !path.probe.asleep, path.probe.outstandingCount == 0
        else {
            return
        }
        let interval = Duration.milliseconds(path.probe.settings.intervalMilliseconds)
        guard let next = path.probe.nextScheduledProbe, next <= now + interval + interval / 16 else {
            return violation(
                "a suspicion ended calm, but the next probe is due \(path.probe.nextScheduledProbe.map { "\($0 - now)" } ?? "never")"
                    + " from now (Interval \(interval))")
        }
    }
}
