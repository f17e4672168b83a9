import MonitorContract
import DBusKit
import Glibc
import Timekeeping

/// netobserverd's command line (INTERFACE.md, "Command lines").
public struct DaemonOptions: Equatable, Sendable {
    public var bus: BusAddress = .session
    public var settings = MonitorSettings()
    /// The settings given as flags; they win over the state file.
    public var flagged: Set<MonitorSettings.Key> = []
    public var stateDirectory: String?
    public var user: String?
    public var replace = false
    public var verbose = false
    /// --target: more targets for this run, not kept in the state file.
    public var targets: [String] = []
    /// How often a Host name that answers is looked up again (DNS health).
    public var dnsRefreshSeconds: UInt32 = 300
    /// A PEM bundle the secure check and the captive-portal API trust instead of the system's.
    public var caFile: String?

    public init() {}

    /// What parsing asks the program to do.
    public enum Outcome: Equatable, Sendable {
        case run(DaemonOptions)
        case help
        case version
    }

    public struct UsageError: Error, Equatable, Sendable {
        public let message: String
    }

    public static let version = "0.1.0"

    public static let usage = """
        Usage: netobserverd [--system | --session | --address ADDRESS]
                            [--host HOST] [--interval MS] [--timeout MS] [--failures N] [--recoveries N]
                            [--family any|ipv4|ipv6] [--check-url URL] [--evidence probes|traffic]
                            [--probing adaptive|steady] [--idle-interval MS]
                            [--secure-check-url URL] [--check-echo] [--ca-file PATH]
                            [--target HOST]... [--dns-refresh S]
                            [--state-dir DIR] [--user NAME]
                            [--replace] [--verbose] [--version] [--help]

        Exports org.netobserver.Monitor: whether this machine can reach HOST, and over what.

          --system             use the system bus
          --session            use the session bus (the default)
          --address ADDRESS    use the bus at this D-Bus address
          --host HOST          host name or IP literal to probe (default one.one.one.one)
          --interval MS        probe interval, 100–3600000 ms (default 1000)
          --timeout MS         probe timeout, 10–60000 ms (default 1000)
          --failures N         lost probes that make the host not answering, 1–100 (default 2)
          --recoveries N       answered probes that make it answer again, 1–100 (default 1)
          --family FAMILY      any, ipv4 or ipv6 (default any)
          --check-url URL      an http:// URL answering 204, to tell the Internet from a captive portal
                               (default "": off)
          --secure-check-url URL
                               an https:// URL answering 204, fetched beside the check with certificate
                               verification: HTTPS blocked or broken on the way reads limited (default "": off)
          --check-echo         every check carries a random nonce, and only a 204 echoing it in
                               X-Netobserver-Echo is the expected answer (a middlebox cannot fake it)
          --ca-file PATH       a PEM bundle trusted instead of the system's for the secure check and the
                               networks' captive-portal APIs
          --evidence E         probes (default), or traffic: while this machine's own TCP traffic to
                               remotes routed like HOST flows, the scheduled probe is skipped
          --probing P          steady (default): a probe every interval, always; adaptive: at the interval
                               only while unsure (no verdict, not full, a suspicion open), else once per
                               calm period, max(idle interval, interval), 4 x as long on a metered link
          --idle-interval MS   the calm period's base under adaptive, 1000–3600000 ms (default 60000)
          --target HOST        one more target to watch, at /org/netobserver/Monitor/N (repeatable; not kept)
          --dns-refresh S      look the host's name up again every S seconds while it answers, 1–86400
                               (default 300)
          --state-dir DIR      where values Set over D-Bus are kept
                               (default /var/lib/netobserver with --system, else $XDG_STATE_HOME/netobserver)
          --user NAME          started as root: switch to NAME after opening sockets, keeping CAP_NET_RAW
          --replace            take the bus name over from a running instance
          --verbose            log debug lines
          --version            print the version and exit
          --help               print this help and exit

        Exit status: 0 after SIGTERM/SIGINT or when replaced, 1 when the bus name is taken or the bus
        is lost or cannot be reached, 2 for a usage error.
        """

    public static func parse(_ arguments: [String]) throws(UsageError) -> Outcome {
        var options = DaemonOptions()
        var busFlag: String?
        var index = 0
        func value(for flag: String, inline: String?) throws(UsageError) -> String {
            if let inline { return inline }
            index += 1
            guard index < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
            return arguments[index]
        }
        func chooseBus(_ flag: String, _ bus: BusAddress) throws(UsageError) {
            if let busFlag, busFlag != flag {
                throw UsageError(message: "\(flag) conflicts with \(busFlag): give one bus")
            }
            busFlag = flag
            options.bus = bus
        }
        while index < arguments.count {
            let argument = arguments[index]
            var flag = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                flag = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            switch flag {
            case "--help", "-h": return .help
            case "--version": return .version
            case "--system": try chooseBus(flag, .system)
            case "--session": try chooseBus(flag, .session)
            case "--address":
                let address = try value(for: flag, inline: inline)
                guard !address.isEmpty else { throw UsageError(message: "--address: the address is empty") }
                try chooseBus(flag, .address(address))
            case "--state-dir":
                let directory = try value(for: flag, inline: inline)
                guard directory.hasPrefix("/") else {
                    throw UsageError(message: "--state-dir: '\(directory)' is not an absolute path")
                }
                options.stateDirectory = directory
            case "--user":
                let user = try value(for: flag, inline: inline)
                guard !user.isEmpty else { throw UsageError(message: "--user: the user name is empty") }
                options.user = user
            case "--target":
                let host = try value(for: flag, inline: inline)
                var settings = MonitorSettings()
                do {
                    try settings.set(.host, text: host)
                } catch {
                    throw UsageError(message: "--target: " + error.message)
                }
                let limit = MonitorContract.Targets.limit
                guard options.targets.count < limit else {
                    throw UsageError(message: "--target: at most \(limit) targets")
                }
                options.targets.append(settings.host)
            case "--dns-refresh":
                let text = try value(for: flag, inline: inline)
                guard let seconds = UInt32(text), (1...86_400).contains(seconds) else {
                    throw UsageError(
                        message: "--dns-refresh: '\(MonitorSettings.printable(text))' is not 1–86400 seconds")
                }
                options.dnsRefreshSeconds = seconds
            case "--ca-file":
                let path = try value(for: flag, inline: inline)
                guard path.hasPrefix("/"), path.utf8.count <= 4096 else {
                    throw UsageError(message: "--ca-file: '\(MonitorSettings.printable(path))' is not an absolute path")
                }
                options.caFile = path
            case "--check-echo":
                let text = inline ?? "true"
                do {
                    try options.settings.set(.checkEcho, text: text, name: flag)
                } catch {
                    throw UsageError(message: error.message)
                }
                options.flagged.insert(.checkEcho)
            case "--replace": options.replace = true
            case "--verbose": options.verbose = true
            default:
                guard let key = MonitorSettings.Key.allCases.first(where: { $0.flag == flag }) else {
                    throw UsageError(message: "unknown option '\(MonitorSettings.printable(argument))' (see --help)")
                }
                let text = try value(for: flag, inline: inline)
                do {
                    // The command line is the administrator's: --check-url may name any address.
                    try options.settings.set(key, text: text, name: flag, fromAdministrator: true)
                } catch {
                    throw UsageError(message: error.message)
                }
                options.flagged.insert(key)
            }
            if inline != nil
                && !["--address", "--state-dir", "--user", "--target", "--dns-refresh", "--ca-file"].contains(flag)
                && MonitorSettings.Key.allCases.first(where: { $0.flag == flag }) == nil
            {
                throw UsageError(message: "\(flag) takes no value")
            }
            index += 1
        }
        return .run(options)
    }

    var dnsRefresh: Duration { .seconds(dnsRefreshSeconds) }

    /// Where the state file lives when --state-dir is not given.
    public func defaultStateDirectory(
        environment: (String) -> String? = { getenv($0).map { String(cString: $0) } }
    ) -> String? {
        if bus == .system { return "/var/lib/netobserver" }
        if let state = environment("XDG_STATE_HOME"), state.hasPrefix("/") { return state + "/netobserver" }
        if let home = environment("HOME"), home.hasPrefix("/") { return home + "/.local/state/netobserver" }
        return nil
    }
}
