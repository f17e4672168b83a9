import EventLoop
import HelperProcess
import MonitorRules
import ProbeRules
import Timekeeping

/// Who asks DNS truth's questions: the blocking helper (the nameservers of /etc/resolv.conf), or
/// systemd-resolved over the system bus. `interface`: the route's (resolved's per-link DNS-over-TLS
/// setting is that link's). `completion` runs on the loop, never before `ask` returns.
public protocol DnsAsking: AnyObject {
    func ask(
        _ question: DnsQuestion, interface: String, limitSeconds: UInt32, completion: @escaping (DnsReply) -> Void)
}

/// One target's DNS truth on the loop: its `DnsTruthCore` driven by what the target's verdict says
/// (the route's interface, Connectivity, the host falling silent, resume) and by the answers, the
/// interception query shared through `InterceptionBook`. What the core concludes goes to `onChange`.
public final class DnsTruthRun {
    private let loop: MainLoop
    private let asking: DnsAsking
    private let interceptions: InterceptionBook
    private var core: DnsTruthCore
    private let wakeup: WakeupTimer
    private var limitSeconds: UInt32
    private var silent = false
    private var started = false
    /// Between the machine's going to sleep and its waking nothing is asked.
    private var asleep = false
    /// The view changed (on the loop, outside any driver step).
    var onChange: ((DnsView) -> Void)?

    init(loop: MainLoop, asking: DnsAsking, interceptions: InterceptionBook, configuration: TargetConfiguration) {
        self.loop = loop
        self.asking = asking
        self.interceptions = interceptions
        core = DnsTruthCore(
            host: configuration.host, hostIsLiteral: Self.isLiteral(configuration.host), family: configuration.family,
            zone: configuration.dnsProbeZone, seed: UInt64.random(in: 0...UInt64.max))
        limitSeconds = Self.limit(configuration.probe)
        wakeup = WakeupTimer(loop: loop)
        wakeup.onFire = { [unowned self] in
            core.timeout(now: loop.now())
            carryOut()
        }
    }

    /// Each question ends within max(5 s, Timeout), the check's limit, in whole seconds.
    static func limit(_ probe: ProbeSettings) -> UInt32 {
        (PortalCheck.limitMilliseconds(timeout: probe.timeoutMilliseconds) + 999) / 1000
    }

    static func isLiteral(_ host: String) -> Bool {
        HostName.isIPv4Literal(host) || HostName.isIPv6Literal(host)
    }

    /// Once the target has its first verdict (so the route's interface is known).
    func start(_ state: MonitorState) {
        guard !started else { return }
        started = true
        core.start(network: Self.network(state), now: loop.now())
        carryOut()
    }

    func configure(_ configuration: TargetConfiguration) {
        limitSeconds = Self.limit(configuration.probe)
        core.settingsChanged(
            host: configuration.host, hostIsLiteral: Self.isLiteral(configuration.host), family: configuration.family,
            zone: configuration.dnsProbeZone, now: loop.now())
        carryOut()
    }

    /// What the target's last verdict says: its interface, whether it is full, whether the host fell silent.
    func observe(_ state: MonitorState) {
        guard !asleep else { return }
        let now = loop.now()
        core.connectivityFull(state.connectivity == .full, now: now)
        core.routeChanged(network: Self.network(state), now: now)
        let nowSilent = state.silence != nil
        if nowSilent && !silent { core.lookAgain(now: now) }
        silent = nowSilent
        carryOut()
    }

    /// The route's interface and its next hops: another network behind the same interface (a Wi-Fi roamed) is
    /// another network.
    static func network(_ state: MonitorState) -> String {
        guard !state.interface.isEmpty else { return "" }
        return [state.interface, state.ipv4.gateway, state.ipv6.gateway].joined(separator: " ")
    }

    /// The machine goes to sleep (true: nothing is asked until it wakes) or woke (false: a fresh lookup).
    func sleep(_ asleep: Bool) {
        self.asleep = asleep
        if asleep {
            wakeup.arm(at: nil)
        } else {
            core.lookAgain(now: loop.now())
            carryOut()
        }
    }

    private func carryOut() {
        for output in core.takeOutputs() {
            switch output {
            case .ask(let question, let generation):
                let answer: (DnsReply) -> Void = { [weak self] reply in
                    guard let self else { return }
                    core.answered(question.kind, generation: generation, reply, now: loop.now())
                    carryOut()
                }
                let interface = core.network.split(separator: " ").first.map(String.init) ?? ""
                if question.kind == .interception {
                    interceptions.ask(
                        question, on: core.network + " " + core.resolvers.joined(separator: ","), interface: interface,
                        limitSeconds: limitSeconds, asking: asking, completion: answer)
                } else {
                    asking.ask(question, interface: interface, limitSeconds: limitSeconds, completion: answer)
                }
            case .changed:
                onChange?(core.view)
            }
        }
        wakeup.arm(at: asleep ? nil : core.nextWakeup)
    }
}

/// The interception query's answers by network (the route's interface and next hops, and the resolvers), shared
/// by every target routed through it: a target asking there gets the answer another got within the hour, or joins
/// the question under way. An unanswered question is not kept: the next asker asks again.
public final class InterceptionBook {
    private struct Entry {
        var reply: DnsReply?
        var at: Instant
        var waiting: [(DnsReply) -> Void] = []
    }

    private let loop: MainLoop
    private var entries: [String: Entry] = [:]

    public init(loop: MainLoop) {
        self.loop = loop
    }

    func ask(
        _ question: DnsQuestion, on network: String, interface: String, limitSeconds: UInt32, asking: DnsAsking,
        completion: @escaping (DnsReply) -> Void
    ) {
        let now = loop.now()
        entries = entries.filter { $0.value.reply == nil || now - $0.value.at < DnsTruthCore.interceptionRefresh }
        if var entry = entries[network] {
            if let reply = entry.reply {
                loop.atEndOfTurn { completion(reply) }
            } else {
                entry.waiting.append(completion)
                entries[network] = entry
            }
            return
        }
        entries[network] = Entry(reply: nil, at: now, waiting: [completion])
        asking.ask(question, interface: interface, limitSeconds: limitSeconds) { [weak self] reply in
            guard let self, var entry = entries[network], entry.at == now, entry.reply == nil else { return }
            let waiting = entry.waiting
            if case .noAnswer = reply.outcome {
                entries[network] = nil
            } else {
                entry.reply = reply
                entry.waiting = []
                entries[network] = entry
            }
            for waiter in waiting { waiter(reply) }
        }
    }
}
