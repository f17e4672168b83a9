import Cellular
import NetCore
import Probe
import Reachability

/// Where name resolution stands for the current Host.
public enum Resolution: Equatable, Sendable {
    case pending
    case failed(String)
    case resolved(IPAddress)
}

/// INTERFACE.md's "What connected means", as one pure function: resolution,
/// the route and the probes in; Status, Interface, Address and Reason out.
public enum StatusRules {
    public static func state(host: String, resolution: Resolution, route: ReachabilityVerdict?,
                             probe: ProbeReport, linkFacts: LinkFactsTable = LinkFactsTable(),
                             previous: MonitorState) -> MonitorState {
        var state = pathState(host: host, resolution: resolution, route: route, probe: probe, previous: previous)
        // The services' word on the route's link: a modem is cellular whatever its link type.
        let facts = linkFacts[state.interface]
        if state.status.isConnected, facts?.isModem == true { state.status = .cellular }
        state.accessTechnology = facts?.generation?.rawValue ?? ""
        state.metered = facts?.meteredByNetworkManager == true || facts?.isModem == true || state.status == .cellular
            || (route?.kind == .cellular && !state.interface.isEmpty)
        return state
    }

    /// Status, Interface, Address and Reason from resolution, route and probes alone.
    private static func pathState(host: String, resolution: Resolution, route: ReachabilityVerdict?,
                                  probe: ProbeReport, previous: MonitorState) -> MonitorState {
        var state = previous
        state.roundTripTime = probe.roundTripMicroseconds
        state.packetLoss = probe.packetLoss
        state.probesSent = probe.probesSent
        state.probesAnswered = probe.probesAnswered
        switch resolution {
        case .pending:
            state.status = .unknown
            state.address = ""
            state.interface = route?.usable == true ? route?.interface ?? "" : ""
            state.reason = "resolving \(host)"
            return state
        case .failed(let message):
            state.status = .none
            state.address = ""
            state.interface = ""
            state.reason = message
            return state
        case .resolved(let address):
            state.address = address.description
        }
        guard let route else {
            state.status = .unknown
            state.interface = ""
            state.reason = "waiting for the kernel's route to \(state.address)"
            return state
        }
        state.interface = route.interface
        guard route.usable else {
            state.status = .none
            state.reason = route.reason
            return state
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
        return state
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
