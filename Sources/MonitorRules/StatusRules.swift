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
    public static func state(host: String, resolution: Resolution, route: ReachabilityVerdict?,
                             probe: ProbeReport, linkFacts: LinkFactsTable = LinkFactsTable(),
                             beyond: BeyondTheHost = BeyondTheHost(), previous: MonitorState) -> MonitorState {
        var state = previous
        update(&state, host: host, resolution: resolution, route: route, probe: probe, linkFacts: linkFacts, beyond: beyond)
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
    public static func update(_ state: inout MonitorState, host: String, resolution: Resolution, route: ReachabilityVerdict?,
                              probe: ProbeReport, linkFacts: LinkFactsTable = LinkFactsTable(),
                              beyond: BeyondTheHost = BeyondTheHost(), text: Text = Text()) {
        pathState(&state, host: host, resolution: resolution, route: route, probe: probe, addressText: text.address)
        state.probeMethod = probe.answeredBy?.rawValue ?? ""
        // The route to Host's address: none while Host has no address in this family.
        let routesHost = if case .resolved = resolution { route?.usable == true } else { false }
        state.gateway = routesHost ? text.gateway ?? route?.gateway?.description ?? "" : ""
        let facts = linkFacts[state.interface]
        let api = route?.usable == true ? facts?.portalAPI : nil
        state.portalAPI = api?.uri ?? ""
        state.portalVenueURL = api?.answer?.venueInfoURL ?? ""
        state.portalSecondsRemaining = api?.answer?.secondsRemaining ?? 0
        connectivity(&state, resolution: resolution, route: route, beyond: beyond, api: api?.answer)
        // The services' word on the route's link: a modem is cellular whatever its link type.
        if state.status.isConnected, facts?.isModem == true { state.status = .cellular }
        state.accessTechnology = facts?.generation?.rawValue ?? ""
        state.metered = facts?.meteredByNetworkManager == true || facts?.isModem == true || state.status == .cellular
            || (route?.kind == .cellular && !state.interface.isEmpty)
    }

    /// Status, Interface, Address and Reason from resolution, route and probes alone.
    private static func pathState(_ state: inout MonitorState, host: String, resolution: Resolution, route: ReachabilityVerdict?,
                                  probe: ProbeReport, addressText: String?) {
        state.roundTripTime = probe.roundTripMicroseconds
        state.packetLoss = probe.packetLoss
        state.probesSent = probe.probesSent
        state.probesAnswered = probe.probesAnswered
        state.probesSkipped = probe.probesSkipped
        switch resolution {
        case .pending:
            state.status = .unknown
            state.address = ""
            state.interface = route?.usable == true ? route?.interface ?? "" : ""
            state.reason = "resolving \(host)"
            return
        case .failed(let message):
            state.status = .none
            state.address = ""
            state.interface = ""
            state.reason = message
            return
        case .resolved(let address):
            state.address = addressText ?? address.description
        }
        guard let route else {
            state.status = .unknown
            state.interface = ""
            state.reason = "waiting for the kernel's route to \(state.address)"
            return
        }
        state.interface = route.interface
        guard route.usable else {
            state.status = .none
            state.reason = route.reason
            return
        }
        switch probe.answering {
        case .some(true):
            state.status = status(for: route.kind)
            state.reason = ""
        case .some(false):
            state.status = .none
            state.reason = probe.reason + methodNote(probe.method)
        case .none:
            state.status = .unknown
            state.reason = "waiting for the first answer from \(state.address)" + methodNote(probe.method)
        }
    }

    /// Connectivity from the path's verdict, the check and DNS health; Status and Reason follow it.
    /// `none` wins, then `portal`, then `limited`.
    /// `api`: what the network's captive-portal API last said (a portal from it goes before the check's).
    private static func connectivity(_ state: inout MonitorState, resolution: Resolution, route: ReachabilityVerdict?,
                                     beyond: BeyondTheHost, api: CapportAnswer?) {
        state.portalURL = ""
        state.partial = false
        var connectivity: Connectivity
        switch state.status {
        case .unknown:
            connectivity = .unknown
        case .none:
            // No address, or no usable route: none. A route and a silent host: limited.
            if case .resolved = resolution, route?.usable == true { connectivity = .limited } else { connectivity = .none }
        default:
            connectivity = .full
        }
        guard connectivity != .none else {
            state.connectivity = .none
            return
        }
        if let api, api.captive, let url = api.userPortalURL {
            state.connectivity = .portal
            state.portalURL = url
            state.status = .none
            state.reason = "captive portal: sign in at \(url)"
            return
        }
        if case .portal(let url)? = beyond.check {
            state.connectivity = .portal
            state.portalURL = url
            state.status = .none
            state.reason = "captive portal: sign in at \(url)"
            return
        }
        guard connectivity == .full else {
            state.connectivity = connectivity
            return
        }
        if let problem = beyond.resolverProblem {
            connectivity = .limited
            state.reason = problem
        } else if case .failed(let why)? = beyond.check {
            connectivity = .limited
            state.reason = "check \(beyond.checkURL) failed: \(why)"
        } else if case .limited(let reason, let partial)? = beyond.check {
            connectivity = .limited
            state.reason = reason
            state.partial = partial
        } else if beyond.check == .intercepted {
            connectivity = .limited
            state.reason = CheckAnswer.intercepted(beyond.checkURL)
        } else if !beyond.checkURL.isEmpty && beyond.check == nil {
            connectivity = .unknown
            state.reason = "checking \(beyond.checkURL)"
        }
        state.connectivity = connectivity
        if connectivity == .limited { state.status = .none }
        if connectivity == .unknown { state.status = .unknown }
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
