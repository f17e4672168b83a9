import Glibc
import MonitorContract
import MonitorRules
import ProbeRules

/// Every target in the Prometheus text exposition format (version 0.0.4), with the metric
/// names and labels of the contract: `host` and `target` (the object path) on every series.
public enum PrometheusText {
    public static func render(_ targets: [(path: String, snapshot: Snapshot)]) -> String {
        var text = ""
        func family(
            _ name: String, _ type: String, _ help: String,
            _ samples: (_ labels: String, _ snapshot: Snapshot) -> [String]
        ) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (path, snapshot) in targets {
                let labels = "host=\"\(escape(snapshot.Host))\",target=\"\(escape(path))\""
                for sample in samples(labels, snapshot) { text += name + sample + "\n" }
            }
        }
        family("netobserver_up", "gauge", "1 when the target is reachable (Status is a connected kind), else 0.") {
            labels, s in
            ["{\(labels)} \(s.Reachable ? 1 : 0)"]
        }
        family("netobserver_status", "gauge", "The target's Status: 1 for the current value, 0 for the others.") {
            labels, s in
            MonitorContract.Status.allCases.map {
                "{\(labels),status=\"\($0.rawValue)\"} \(s.Status == $0.rawValue ? 1 : 0)"
            }
        }
        family(
            "netobserver_connectivity", "gauge", "The target's Connectivity: 1 for the current value, 0 for the others."
        ) { labels, s in
            MonitorContract.Connectivity.allCases.map {
                "{\(labels),connectivity=\"\($0.rawValue)\"} \(s.Connectivity == $0.rawValue ? 1 : 0)"
            }
        }
        family(
            "netobserver_connectivity_family", "gauge",
            "Each address family's Connectivity (Connectivity4, Connectivity6): 1 for the current value, 0 for the others."
        ) { labels, s in
            [("ipv4", s.Connectivity4), ("ipv6", s.Connectivity6)].flatMap { family, current in
                MonitorContract.Connectivity.allCases.map {
                    "{\(labels),family=\"\(family)\",connectivity=\"\($0.rawValue)\"} \(current == $0.rawValue ? 1 : 0)"
                }
            }
        }
        family("netobserver_round_trip_seconds", "gauge", "The last successful round trip to the target.") {
            labels, s in
            ["{\(labels)} \(number(Double(s.RoundTripTime) / 1e6))"]
        }
        family("netobserver_packet_loss_ratio", "gauge", "Share of the last 20 probes that failed.") { labels, s in
            ["{\(labels)} \(number(s.PacketLoss))"]
        }
        family("netobserver_last_change_timestamp_seconds", "gauge", "When Status last changed, Unix time.") {
            labels, s in
            ["{\(labels)} \(number(Double(s.LastChange) / 1e6))"]
        }
        family("netobserver_probes_sent_total", "counter", "Probes sent to the target since the service started.") {
            labels, s in
            ["{\(labels)} \(s.ProbesSent)"]
        }
        family("netobserver_probes_answered_total", "counter", "Probes the target answered since the service started.")
        { labels, s in
            ["{\(labels)} \(s.ProbesAnswered)"]
        }
        family(
            "netobserver_traffic", "gauge",
            "What this machine's own TCP traffic says about the route to the target: 1 for the current value, "
                + "0 for the others (all 0 while there is no route)."
        ) { labels, s in
            ["idle", "flowing", "stalled"].map { "{\(labels),traffic=\"\($0)\"} \(s.Traffic == $0 ? 1 : 0)" }
        }
        family(
            "netobserver_probes_skipped_total", "counter",
            "Scheduled probes skipped because traffic flowed (Evidence traffic), since the service started."
        ) { labels, s in
            ["{\(labels)} \(s.ProbesSkipped)"]
        }
        family(
            "netobserver_partial", "gauge",
            "1 while the plain check passes and the secure one fails (HTTPS blocked or broken on the way), else 0."
        ) { labels, s in
            ["{\(labels)} \(s.Partial ? 1 : 0)"]
        }
        family(
            "netobserver_portal_seconds_remaining", "gauge",
            "The network's captive-portal API's seconds-remaining at its last answer (0 when not given)."
        ) { labels, s in
            ["{\(labels)} \(s.PortalSecondsRemaining)"]
        }
        family(
            "netobserver_blame", "gauge",
            "Where the path to the target breaks (Blame): 1 for the current place, 0 for the others (all 0 while full)."
        ) { labels, s in
            Blame.allCases.map { "{\(labels),blame=\"\($0.rawValue)\"} \(s.Blame == $0.rawValue ? 1 : 0)" }
        }
        family(
            "netobserver_dns", "gauge",
            "DNS truth (Dns): 1 for the current value, 0 for the others."
        ) { labels, s in
            DnsHealth.allCases.map { "{\(labels),state=\"\($0.rawValue)\"} \(s.Dns == $0.rawValue ? 1 : 0)" }
        }
        family(
            "netobserver_dns_round_trip_seconds", "gauge",
            "The last fresh DNS lookup's time (DnsRoundTripTime), 0 before the first."
        ) { labels, s in
            ["{\(labels)} \(number(Double(s.DnsRoundTripTime) / 1e6))"]
        }
        family(
            "netobserver_connectivity_seconds_total", "counter",
            "Seconds the target spent in each Connectivity value since its history began (TimeInState)."
        ) { labels, s in
            let times = s.TimeInState
            return MonitorContract.Connectivity.allCases.map {
                "{\(labels),connectivity=\"\($0.rawValue)\"} \(times[$0.rawValue] ?? 0)"
            }
        }
        family(
            "netobserver_asleep_seconds_total", "counter", "Seconds the machine slept since the target's history began."
        ) { labels, s in
            ["{\(labels)} \(s.TimeInState["asleep"] ?? 0)"]
        }
        family(
            "netobserver_outages_total", "counter",
            "Outages the service keeps in the target's history (1,000 at most, 30 days), by their Blame."
        ) { labels, s in
            (Blame.allCases.map(\.rawValue) + [""]).map { blame in
                "{\(labels),blame=\"\(blame)\"} \(s.outageCounts[blame] ?? 0)"
            }
        }
        return text
    }

    /// Label values escape backslash, double quote and newline.
    static func escape(_ value: String) -> String {
        value.escaping(["\\": "\\\\", "\"": "\\\"", "\n": "\\n"])
    }

    /// A sample value: integers without a fraction, others as Swift prints them (a Go float).
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "NaN" : (value > 0 ? "+Inf" : "-Inf") }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
