import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping

/// What a path's own world says, handed to it as is: its route (the kernel's verdict, with the view of its link
/// the service gives), its transport's answers, its check, its traffic sampler, its next hop. A target hands these
/// on as they come (`TargetCore.Event.path`); the rest of a path's events are its target's to give, so none is
/// ever filtered out at run time.
public enum PathEvidence: Sendable {
    /// The route watch's verdict for the target changed (with the families that have a default route now), and
    /// the view of the link the path is routed over (the service's: `ServiceCore` routes verdicts).
    case route(ReachabilityVerdict, link: LinkView? = nil)
    /// What the service says of link `id` changed (nil: it is gone): taken while the path is routed over it.
    case link(LinkID, LinkView?)
    /// The transport can send to the address of the last `.probe` this way (nil: not at all).
    case probing(ProbeMethod?)
    /// A reply, an error, a refusal or a failed send from the transport.
    case probe(ProbeInput)
    /// The check `generation` of CheckURL ended.
    case checkAnswered(generation: UInt64, CheckAnswer.Meaning)
    /// Traffic sample `generation` was taken, at this cost in CPU time; nil: it could not be.
    case trafficSampled(generation: UInt64, TrafficSample?, cost: Duration)
    /// The neighbour check `generation` of the next hop answered.
    case neighborAnswered(generation: UInt64, NeighborAnswer)
    /// The TTL-limited probe `generation` past the gateway ended.
    case beyondAnswered(generation: UInt64, BeyondAnswer)
}

/// What a path asks of its own world, answered with `PathEvidence`: its route watch, its transport, its check, its
/// traffic sampler, its next hop, its log. A target hands each on tagged with its family (`TargetCore.Action.path`);
/// what a path asks of its target (a lookup, a publication, a verdict) is `PathCore.Action`'s own, so a world is
/// never handed one.
public enum PathAsk: Equatable, Sendable {
    /// Watch the route to `address` (nil: none; the route watch is this path's family's).
    case watchRoute(IPAddress?)
    /// Send probes to `address` from now on (nil: stop); answer with `.probing`.
    case probe(IPAddress?)
    /// Send probe `sequence` (see `ProbeCore.Output.send`).
    case send(sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool)
    /// GET CheckURL, lookup included, within `limitMilliseconds`; answer with `.checkAnswered`.
    case startCheck(url: String, generation: UInt64, limitMilliseconds: UInt32)
    case cancelCheck
    /// Sample the established TCP connections on `interface` for the route to `host`, on the loop
    /// when `inline` (it was cheap), else off it; answer with `.trafficSampled`.
    /// `route`: the route core's word on Host's route (what the census counts connections routed like; nil when
    /// the verdict names no interface index, and the census asks the kernel).
    case sampleTraffic(generation: UInt64, host: IPAddress, route: HostRoute?, interface: String, inline: Bool)
    /// The probe report changed (for logs; the state to publish follows in `.publish`).
    case reportChanged(old: ProbeReport, new: ProbeReport)
    /// Ask the next hop (see `PathDiagnosis.Action`); answer with `.neighborAnswered`.
    case checkNeighbor(gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64, routine: Bool)
    /// One echo to `host` whose TTL expires past `gateway`; answer with `.beyondAnswered`.
    case probeBeyond(host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64)
}
