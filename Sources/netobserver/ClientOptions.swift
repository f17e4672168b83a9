import DBusKit
import MonitorClientCore
import MonitorContract
import MonitorRules

/// `netobserver` command lines (INTERFACE.md, "The client").
struct ClientOptions {
    enum Command: Equatable {
        case status(json: Bool)
        case monitor(MonitorFormat, all: Bool)
        case targets
        case add(host: String)
        case remove(path: String)
        case metrics(textfile: String?)
        case check(require: Requirement)
        case wait(seconds: UInt32, require: Requirement)
        case set(MonitorContract.Property, value: String)
        case history(limit: UInt32, json: Bool)
    }

    /// The bus flag given; nil: the default (`DefaultBus`).
    var bus: BusAddress?
    /// The target addressed (--target N|PATH); the default one otherwise.
    var path = MonitorContract.objectPath
    var command: Command

    struct UsageError: Error {
        let message: String
    }

    static let settingNames = MonitorContract.Property.settings.compactMap(\.settingName).joined(separator: ", ")

    static let usage = """
        Usage: netobserver [--system | --session | --address ADDRESS] [--target N|PATH] COMMAND
          (no bus flag: the system bus when the service runs or can be started there, else the session bus)
          status [--json]            one screen: status, host, interface, round trip, loss, reason
          monitor [--json | --format F]  a line per change until interrupted; F: \(MonitorFormat.barNames.joined(separator: ", "))
          targets                    every target, the default first: path, host, status
          add HOST                   a new target probing HOST; prints its path
          remove N|PATH              removes an added target
          metrics [--textfile PATH]  Prometheus text format; with --textfile, rewritten atomically on every change
          check [--require R]        probe now, print the status (exit 0 when Connectivity is at least R, 1 when not)
          wait [--timeout SECONDS] [--require R]  exit 0 once Connectivity is at least R, 1 on timeout (default 30 s)
                                     R: full (default, which is Reachable), portal or limited
          set PROPERTY VALUE         \(settingNames)
          history [--limit N] [--json]  the last N outages (default 20), newest first, and the share of time full
        Exit status: 0 as above, 1 when the service is not running or refuses a value, 2 for a usage error.
        """

    /// `2` → …/Monitor/2; a path is taken as it is (0 is the default target).
    static func targetPath(_ text: String) -> String? {
        if text == "0" { return MonitorContract.objectPath }
        if let number = UInt32(text), number >= 1 { return MonitorContract.Targets.path(number) }
        if text == MonitorContract.objectPath || MonitorContract.Targets.number(of: text) != nil { return text }
        return nil
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> ClientOptions? {
        var bus: BusAddress?
        var path = MonitorContract.objectPath
        var rest = arguments[...]
        while let first = rest.first, first.hasPrefix("--") {
            rest = rest.dropFirst()
            switch first {
            case "--system": bus = .system
            case "--session": bus = .session
            case "--address":
                guard let address = rest.popFirst(), !address.isEmpty else {
                    throw UsageError(message: "--address needs a value")
                }
                bus = .address(address)
            case "--target":
                guard let target = rest.popFirst(), let chosen = targetPath(target) else {
                    throw UsageError(message: "--target takes a target number or its object path")
                }
                path = chosen
            case "--help": return nil
            default: throw UsageError(message: "unknown option '\(first)' (see --help)")
            }
        }
        guard let name = rest.popFirst() else { throw UsageError(message: "no command given (see --help)") }
        let flags = Array(rest)
        func jsonFlag() throws(UsageError) -> Bool {
            guard flags.allSatisfy({ $0 == "--json" }), flags.count <= 1 else {
                throw UsageError(message: "\(name) takes only --json")
            }
            return flags.count == 1
        }
        let command: Command
        switch name {
        case "status": command = .status(json: try jsonFlag())
        case "monitor":
            var format = MonitorFormat.plain
            var all = false
            var rest = flags[...]
            while let flag = rest.popFirst() {
                switch flag {
                case "--json": format = .json
                case "--all": all = true
                case "--format":
                    guard let name = rest.popFirst(), let chosen = MonitorFormat(rawValue: name), chosen != .plain
                    else {
                        throw UsageError(
                            message: "monitor: --format takes one of \(MonitorFormat.barNames.joined(separator: ", "))")
                    }
                    format = chosen
                default: throw UsageError(message: "monitor takes --json, --format FORMAT or --all")
                }
            }
            command = .monitor(format, all: all)
        case "targets":
            guard flags.isEmpty else { throw UsageError(message: "targets takes no arguments") }
            command = .targets
        case "add":
            guard flags.count == 1, !flags[0].isEmpty else { throw UsageError(message: "add takes HOST") }
            command = .add(host: flags[0])
        case "remove":
            guard flags.count == 1, let target = targetPath(flags[0]), target != MonitorContract.objectPath else {
                throw UsageError(message: "remove takes the number or path of an added target")
            }
            command = .remove(path: target)
        case "metrics":
            var textfile: String?
            if !flags.isEmpty {
                guard flags.count == 2, flags[0] == "--textfile", !flags[1].isEmpty else {
                    throw UsageError(message: "metrics takes only --textfile PATH")
                }
                textfile = flags[1]
            }
            command = .metrics(textfile: textfile)
        case "check":
            var require = Requirement.full
            var rest = flags[...]
            while let flag = rest.popFirst() {
                guard flag == "--require", let word = rest.popFirst(), let chosen = Requirement(rawValue: word) else {
                    throw UsageError(message: "check takes only --require full|portal|limited")
                }
                require = chosen
            }
            command = .check(require: require)
        case "wait":
            var seconds: UInt32 = 30
            var require = Requirement.full
            var rest = flags[...]
            while let flag = rest.popFirst() {
                switch flag {
                case "--timeout":
                    guard let value = rest.popFirst().flatMap({ UInt32($0) }), value <= 3600 else {
                        throw UsageError(message: "wait: --timeout takes a number of seconds, 0–3600")
                    }
                    seconds = value
                case "--require":
                    guard let chosen = rest.popFirst().flatMap({ Requirement(rawValue: $0) }) else {
                        throw UsageError(message: "wait: --require takes full, portal or limited")
                    }
                    require = chosen
                default:
                    throw UsageError(message: "wait takes --timeout SECONDS and --require full|portal|limited")
                }
            }
            command = .wait(seconds: seconds, require: require)
        case "history":
            var limit: UInt32 = 20
            var json = false
            var rest = flags[...]
            while let flag = rest.popFirst() {
                switch flag {
                case "--limit":
                    guard let value = rest.popFirst().flatMap({ UInt32($0) }),
                        (1...MonitorContract.historyLimit).contains(value)
                    else {
                        throw UsageError(message: "history: --limit takes a number, 1–\(MonitorContract.historyLimit)")
                    }
                    limit = value
                case "--json": json = true
                default: throw UsageError(message: "history takes --limit N and --json")
                }
            }
            command = .history(limit: limit, json: json)
        case "set":
            guard flags.count == 2 else { throw UsageError(message: "set takes PROPERTY VALUE") }
            guard let property = MonitorContract.Property(settingName: flags[0]) else {
                throw UsageError(message: "set: unknown property '\(flags[0])' (\(settingNames))")
            }
            command = .set(property, value: flags[1])
        case "help", "--help":
            return nil
        default:
            throw UsageError(message: "unknown command '\(name)' (see --help)")
        }
        return ClientOptions(bus: bus, path: path, command: command)
    }
}

/// The least Connectivity that counts for `check` and `wait`, in the order
/// none < limited < portal < full (INTERFACE.md, "Boot and timers").
enum Requirement: String, Sendable {
    case limited, portal, full

    private static let order = ["none", "limited", "portal", "full"]

    /// Whether `connectivity` (the property's word) is at least this; `unknown` never is.
    func isMet(by connectivity: String) -> Bool {
        guard let have = Self.order.firstIndex(of: connectivity), let need = Self.order.firstIndex(of: rawValue) else {
            return false
        }
        return have >= need
    }
}
