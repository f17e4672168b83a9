import EventLoop
import HTTPCheck
import MonitorRules
import NetAddress
import Probe

/// The networks' own word on their captive portals (RFC 8908/8910), for every target: the
/// announcements (routers' option 37 from the route watch, else DHCP option 114 from NetworkManager)
/// go into `CapportFollower`; its fetches run here, over verified HTTPS, off the loop and each
/// ended by its limit; what the APIs say joins the link facts every target reads.
final class CapportWatch {
    private let loop: MainLoop
    private let resolver: HostResolver
    private let http: (any HTTPClientSource)?
    private let caFile: String?
    /// Each fetch ends within this (max(5 s, Timeout) of the default target, when asked).
    private let limitMilliseconds: () -> Int
    private var follower = CapportFollower()
    private var fetches: [String: CheckRun] = [:]
    private var routerAnnouncements: [String: String] = [:]
    private var services = LinkFactsTable()
    private let wakeup: WakeupTimer
    /// The link facts with the APIs' answers in, whenever either changes.
    var onChange: ((LinkFactsTable) -> Void)?
    /// Whether an address is one of this machine's: the API is never fetched there (an announcement naming this
    /// machine would make the service ask itself, or whatever listens here).
    var isThisMachine: (IPAddress) -> Bool = { _ in false }

    init(
        loop: MainLoop, resolver: HostResolver, http: (any HTTPClientSource)?, caFile: String?,
        limitMilliseconds: @escaping () -> Int
    ) {
        self.loop = loop
        self.resolver = resolver
        self.http = http
        self.caFile = caFile
        self.limitMilliseconds = limitMilliseconds
        wakeup = WakeupTimer(loop: loop)
        wakeup.onFire = { [unowned self] in carryOut(follower.handleTimeout(now: loop.now())) }
    }

    deinit {
        for fetch in fetches.values { fetch.cancel() }
    }

    /// What routers announce now, by interface.
    func routersAnnounced(_ uris: [String: String]) {
        routerAnnouncements = uris
        if announce() { publish() }
    }

    /// What ModemManager and NetworkManager say now (DHCP's announcements among it): published once, whatever
    /// the announcements did.
    func linkFactsChanged(_ table: LinkFactsTable) {
        services = table
        _ = announce()
        publish()
    }

    var table: LinkFactsTable { services.with(portalAPIs: follower.facts) }

    /// Hands the follower every announcement; true when what it knows changed.
    private func announce() -> Bool {
        // A router's word goes before DHCP's on the same interface (it is the fresher, and IPv6's own).
        let merged = services.dhcpPortalAPIs.merging(routerAnnouncements) { _, router in router }
        let before = follower.facts
        carryOut(follower.announced(merged, now: loop.now()))
        return follower.facts != before
    }

    private func publish() {
        onChange?(table)
    }

    private func carryOut(_ actions: [CapportFollower.Action]) {
        for action in actions {
            switch action {
            case .fetch(let interface, let uri, let generation):
                fetch(interface, uri, generation)
            case .cancel(let interface):
                fetches.removeValue(forKey: interface)?.cancel()
            case .log(let line):
                Log.info(line)
            }
        }
        wakeup.arm(at: follower.nextWakeup)
    }

    private func fetch(_ interface: String, _ uri: String, _ generation: UInt64) {
        fetches.removeValue(forKey: interface)?.cancel()
        guard CheckURL.isValid(uri, secure: true) else {
            return loop.atEndOfTurn { [weak self] in
                self?.fetched(interface, generation, .failure(.init(text: "not a valid https URL")))
            }
        }
        let options = HTTPRequestOptions(
            secure: true, caFile: caFile, headers: ["Accept: application/captive+json"],
            keepBody: true, bodyLimit: CapportAnswer.largestBody)
        // The API's host may be on the local network, never loopback, link-local, unspecified or multicast.
        // Its lookup goes first, as the default target's do: no added target's hanging name holds it up.
        fetches[interface] = CheckRun(
            url: uri, options: options, limitMilliseconds: limitMilliseconds(), mayPointInward: false,
            isThisMachine: isThisMachine, first: true, loop: loop, resolver: resolver,
            http: http
        ) { [weak self] answer in
            guard let self else { return }
            fetches[interface] = nil
            fetched(interface, generation, Self.read(answer))
        }
    }

    private func fetched(
        _ interface: String, _ generation: UInt64, _ result: Result<CapportAnswer, StrictJSON.Malformed>
    ) {
        let (changed, actions) = follower.fetched(interface: interface, generation: generation, result, now: loop.now())
        carryOut(actions)
        if changed { publish() }
    }

    /// The API's answer: a 200 of at most 4,096 bytes of JSON as RFC 8908 has it.
    static func read(_ answer: CheckAnswer) -> Result<CapportAnswer, StrictJSON.Malformed> {
        if answer.bodyBytes > CapportAnswer.largestBody {
            return .failure(.init(text: "more than \(CapportAnswer.largestBody) bytes"))
        }
        guard answer.transportError.isEmpty else { return .failure(.init(text: answer.transportError)) }
        guard answer.status == 200 else {
            return .failure(.init(text: answer.status == 0 ? "no HTTP answer" : "HTTP \(answer.status)"))
        }
        return CapportAnswer.parse(answer.body)
    }
}
