import NetAddress
import ProbeRules
import ReachabilityRules

/// Where name resolution stands for the current Host.
public enum Resolution: Equatable, Sendable {
    case pending
    case failed(String)
    case resolved(IPAddress)
}

/// What decides Connectivity beyond the route and the probes: the HTTP check and DNS health.
public struct BeyondTheHost: Equatable, Sendable {
    /// "" when the check is off.
    public var checkURL = ""
    /// The check's answer for the current network; nil while it runs (or when off).
    public var check: CheckAnswer.Meaning?
    /// Set while Host's name fails to resolve though its address answers.
    public var resolverProblem: String?

    public init(checkURL: String = "", check: CheckAnswer.Meaning? = nil, resolverProblem: String? = nil) {
        self.checkURL = checkURL
        self.check = check
        self.resolverProblem = resolverProblem
    }
}

/// INTERFACE.md's "What connected means", as one pure function: resolution,
/// the route and the probes in; Status, Interface, Address and Reason out.
public enum StatusRules {
    public static func state(
        host: String, resolution: Resolution, route: ReachabilityVerdict?,
        probe: ProbeReport, link: LinkView? = nil,
        beyond: BeyondTheHost = BeyondTheHost(), previous: MonitorState
    ) -> MonitorState {
        var state = previous
        update(
            &state, host: host, resolution: resolution, route: route, probe: probe, link: link, beyond: beyond
        )
        return state
    }

    /// The resolved address and the route's gateway as text, when the caller keeps them (formatting an
    /// address at every publication of every target costs more than the rest of the rules).
    public struct Text: Equatable, Sendable {
        public var address: String?
        public var gateway: String?

        public init(address: String? = nil, gateway: String? = nil) {
            self.address = address
            self.gateway = gateway
        }
    }

    /// The same, written over the state last published (in place: a state is some forty fields, and
    /// this runs at every publication of every target). `text`: what the caller keeps of the address
    /// and the gateway as text, in step with `resolution` and `route`.
    public static func update(
        _ state: inout MonitorState, host: String, resolution: Resolution, route: ReachabilityVerdict?,
        probe: ProbeReport, link: LinkView? = nil,
        beyond: BeyondTheHost = BeyondTheHost(), text: Text = Text()
    ) {
        pathState(&state, host: host, resolution: resolution, route: route, probe: probe, addressText: text.address)
        state.probeMethod = probe.answeredBy?.rawValue ?? ""
        // The route to Host's address: none while Host has no address in this family.
        let routesHost = if case .resolved = resolution { route?.usable == true } else { false }
        state.gateway = routesHost ? text.gateway ?? route?.gateway?.description ?? "" : ""
        let facts = LinkView.facts(of: link, on: state.interface)
        let api = route?.usable == true ? facts?.portalAPI : nil
        state.portalAPI = api?.uri ?? ""
        state.portalVenueURL = api?.answer?.venueInfoURL ?? ""
        state.portalSecondsRemaining = api?.answer?.secondsRemaining ?? 0
        connectivity(&state, resolution: resolution, route: route, beyond: beyond, api: api?.answer)
        // The services' word on the route's link: a modem is cellular whatever its link type.
        if state.status.isConnected, facts?.isModem == true { state.status = .cellular }
        state.accessTechnology = facts?.generation?.rawValue ?? ""
        state.metered =
            facts?.meteredByNetworkManager == true || facts?.isModem == true || state.status == .cellular
            || (route?.kind == .cellular && !state.interface.isEmpty)
    }

    /// Status from resolution, route and probes alone (no text: the pace across families reads it at every step).
    static func pathStatus(resolution: Resolution, route: ReachabilityVerdict?, probe: ProbeReport) -> Status {
        switch resolution {
        case .pending: return .unknown
        case .failed: return .none
        case .resolved: break
        }
        guard let route else { return .unknown }
        guard route.usable else { return .none }
        switch probe.answering {
        case .some(true): return status(for: route.kind)
        case .some(false): return .none
        case .none: return .unknown
        }
    }

    /// Interface: the route's, but none while the lookup failed, or while Host has no address and the route is unusable.
    static func routeInterface(resolution: Resolution, route: ReachabilityVerdict?) -> String {
        guard let route else { return "" }
        switch resolution {
        case .pending: return route.usable ? route.interface : ""
        case .failed: return ""
        case .resolved: return route.interface
        }
    }

    /// Status, Interface, Address and Reason from resolution, route and probes alone.
    private static func pathState(
        _ state: inout MonitorState, host: String, resolution: Resolution, route: ReachabilityVerdict?,
        probe: ProbeReport, addressText: String?
    ) {
        state.roundTripTime = probe.roundTripMicroseconds
        state.packetLoss = probe.packetLoss
        state.probesSent = probe.probesSent
        state.probesAnswered = probe.probesAnswered
        state.probesSkipped = probe.probesSkipped
        state.status = pathStatus(resolution: resolution, route: route, probe: probe)
        state.interface = routeInterface(resolution: resolution, route: route)
        switch resolution {
        case .pending:
            state.address = ""
            state.reason = "resolving \(host)"
            return
        case .failed(let message):
            state.address = ""
            state.reason = message
            return
        case .resolved(let address):
            state.address = addressText ?? address.description
        }
        guard let route else {
            state.reason = "waiting for the kernel's route to \(state.address)"
            return
        }
        guard route.usable else {
            state.reason = route.reason
            return
        }
        switch probe.answering {
        case .some(true):
            state.reason = ""
        case .some(false):
            if let detail = probe.failure?.silenceDetail {
                state.setSilence(detail + methodNote(probe.method))
            } else {
                state.reason = probe.reason + methodNote(probe.method)
            }
        case .none:
            state.reason = "waiting for the first answer from \(state.address)" + methodNote(probe.method)
        }
    }

    /// What decides Connectivity, found without writing any text (`update` writes the words).
    /// `none` wins, then `portal`, then `limited`.
    enum Decision {
        /// The path's own word: `unknown`, `none`, `limited` (a route and a silent host) or `full`.
        case path(Connectivity)
        /// A portal, from the API's answer or the check's.
        case portal(url: String)
        case resolverProblem(String)
        case checkFailed(String)
        case checkLimited(reason: String, partial: Bool)
        case intercepted
        /// `unknown` while the first check on this network runs.
        case checking

        var connectivity: Connectivity {
            switch self {
            case .path(let connectivity): connectivity
            case .portal: .portal
            case .resolverProblem, .checkFailed, .checkLimited, .intercepted: .limited
            case .checking: .unknown
            }
        }
    }

    /// `api`: what the network's captive-portal API last said (a portal from it goes before the check's).
    static func decide(
        status: Status, resolution: Resolution, route: ReachabilityVerdict?, beyond: BeyondTheHost,
        api: CapportAnswer?
    ) -> Decision {
        let connectivity: Connectivity
        switch status {
        case .unknown:
            connectivity = .unknown
        case .none:
            // No address, or no usable route: none. A route and a silent host: limited.
            if case .resolved = resolution, route?.usable == true {
                connectivity = .limited
            } else {
                connectivity = .none
            }
        default:
            connectivity = .full
        }
        guard connectivity != .none else { return .path(.none) }
        if let api, api.captive, let url = api.userPortalURL { return .portal(url: url) }
        if case .portal(let url)? = beyond.check { return .portal(url: url) }
        guard connectivity == .full else { return .path(connectivity) }
        if let problem = beyond.resolverProblem { return .resolverProblem(problem) }
        switch beyond.check {
        case .failed(let why)?: return .checkFailed(why)
        case .limited(let reason, let partial)?: return .checkLimited(reason: reason, partial: partial)
        case .intercepted?: return .intercepted
        case nil where !beyond.checkURL.isEmpty: return .checking
        default: return .path(.full)
        }
    }

    /// Connectivity alone, as `update` would write it, with no text built: read at every step.
    public static func connectivity(
        resolution: Resolution, route: ReachabilityVerdict?, probe: ProbeReport,
        link: LinkView? = nil, beyond: BeyondTheHost = BeyondTheHost()
    ) -> Connectivity {
        let status = pathStatus(resolution: resolution, route: route, probe: probe)
        let api =
            route?.usable == true
            ? LinkView.facts(of: link, on: routeInterface(resolution: resolution, route: route))?.portalAPI?.answer
            : nil
        return decide(status: status, resolution: resolution, route: route, beyond: beyond, api: api).connectivity
    }

    /// Connectivity from the path's verdict, the check and DNS health; Status and Reason follow it.
    private static func connectivity(
        _ state: inout MonitorState, resolution: Resolution, route: ReachabilityVerdict?,
        beyond: BeyondTheHost, api: CapportAnswer?
    ) {
        state.portalURL = ""
        state.partial = false
        let decision = decide(status: state.status, resolution: resolution, route: route, beyond: beyond, api: api)
        switch decision {
        case .path:
            break
        case .portal(let url):
            state.portalURL = url
            state.status = .none
            state.reason = "captive portal: sign in at \(url)"
        case .resolverProblem(let problem):
            state.reason = problem
        case .checkFailed(let why):
            state.reason = "check \(beyond.checkURL) failed: \(why)"
        case .checkLimited(let reason, let partial):
            state.reason = reason
            state.partial = partial
        case .intercepted:
            state.reason = CheckAnswer.intercepted(beyond.checkURL)
        case .checking:
            state.reason = "checking \(beyond.checkURL)"
        }
        state.connectivity = decision.connectivity
        if case .path = decision { return }
        if state.connectivity == .limited { state.status = .none }
        if state.connectivity == .unknown { state.status = .unknown }
    }

    static func status(for kind: InterfaceKind?) -> Status {
        switch kind {
        case .wifi: .wifi
        case .cellular: .cellular
        case .vpn: .vpn
        case .ethernet: .ethernet
        case .other, nil: .other
        }
    }

    private static func methodNote(_ method: ProbeMethod?) -> String {
        method == .tcp ? " (probing with TCP connections to port 443: ICMP sockets are not permitted)" : ""
    }
}
