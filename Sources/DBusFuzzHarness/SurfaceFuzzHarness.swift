import HelperProcess
import DBusKit
import DaemonWorlds
import MonitorClientCore
import MonitorContract
import MonitorRules
import MonitorService
import NetAddress

/// The surfaces that read what someone else wrote, one fuzz input each. A violation
/// traps. Shared by the fuzzer (FUZZ_SURFACE picks one) and the replay tests.
public enum FuzzSurface: String, CaseIterable, Sendable {
    /// Method calls to the whole service (`DBusFuzzHarness`).
    case dbus
    /// The state file as read at start and on SIGHUP.
    case statefile
    /// Host and CheckURL, as Set over D-Bus, on the command line and from the state file.
    case validators
    /// The client: a signal (from the service's owner or anyone else) into its snapshot and every output format.
    case client
    /// The system-bus follower: messages from ModemManager/NetworkManager into its object table.
    case follower
    /// The wire between the daemon and its blocking helper: a frame's body as a request and as an answer.
    case helper
    /// DNS truth's answers: what the resolver library received (first byte 0: to an A question, 1: AAAA), or what
    /// systemd-resolved replied to ResolveHostname (2: a message in wire format).
    case dns

    public func run(_ bytes: [UInt8]) {
        switch self {
        case .dbus: DBusFuzzHarness.run(bytes)
        case .statefile: Self.stateFile(bytes)
        case .validators: Self.validators(bytes)
        case .client: Self.client(bytes)
        case .follower: Self.follower(bytes)
        case .helper: HelperWireFuzzing.run(bytes)
        case .dns: Self.dns(bytes)
        }
    }

    private static func dns(_ bytes: [UInt8]) {
        guard let kind = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        let family: IPFamily = kind % 3 == 1 ? .v6 : .v4
        let outcome: DnsOutcome
        if kind % 3 == 2 {
            guard let message = try? Message(wire: rest) else { return }
            let result: Result<Message, DBusError> =
                message.kind == .error
                ? .failure(DBusError(name: message.errorName ?? "", message: message.firstStringArgument ?? ""))
                : .success(message)
            outcome = ResolvedReply.read(result, family: family).0
        } else {
            outcome = DnsAsker.read(answer: rest, name: "web.test", family: family)
        }
        if case .addresses(let list) = outcome {
            precondition(!list.isEmpty && list.count <= 4096, "\(list.count) addresses")
            precondition(list.allSatisfy { $0.ipFamily == family }, "an address of the other family")
        }
        if case .noAnswer(let why) = outcome { precondition(why.utf8.count <= 512, "a \(why.utf8.count)-byte reason") }
    }

    private static func stateFile(_ bytes: [UInt8]) {
        let (state, problems) = StateStore.parse(bytes.prefix(StateStore.maximumSize), path: "settings")
        precondition(state.added.count <= MonitorContract.Targets.limit, "\(state.added.count) targets read back")
        precondition(
            state.added.allSatisfy {
                MonitorContract.Targets.numbers.contains($0.number) && $0.number < state.nextTarget
            },
            "a target number outside the numbers, or not below NextTarget")
        precondition(
            state.nextTarget <= MonitorContract.Targets.numbers.upperBound + 1, "NextTarget \(state.nextTarget)")
        precondition(problems.count <= bytes.count + 1, "more problems than lines")
        // Whatever was read, what the service then writes reads back the same.
        var settings = MonitorSettings()
        for key in MonitorSettings.Key.allCases {
            guard let text = state.targets[0]?[key] else { continue }
            try? settings.set(key, text: text)
        }
        for key in MonitorSettings.Key.allCases {
            var again = MonitorSettings()
            precondition((try? again.set(key, text: settings.text(key))) != nil, "\(key.name) does not read back")
        }
    }

    private static func validators(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        if HostName.isValid(text) {
            precondition(text.utf8.count <= HostName.longest, "a \(text.utf8.count)-byte Host")
            precondition(!text.utf8.contains { $0 < 0x21 || $0 > 0x7E }, "a Host with odd bytes")
        }
        if CheckURL.isValid(text), !text.isEmpty {
            precondition(text.utf8.count <= CheckURL.longest, "a \(text.utf8.count)-byte CheckURL")
            precondition(CheckURLTarget(text) != nil, "a valid CheckURL with no host")
        }
        for key in MonitorSettings.Key.allCases {
            var settings = MonitorSettings()
            do throws(SettingError) {
                try settings.set(key, text: text)
                precondition(settings.text(key) == text || key.range != nil, "\(key.name) kept something else")
                if key == .checkURL {
                    precondition(!settings.checkURLMayPointInward, "a D-Bus CheckURL allowed inward")
                    precondition(
                        CheckURLTarget(text)?.isInwardLiteral != true, "an inward CheckURL accepted over D-Bus")
                }
            } catch {
                precondition(settings == MonitorSettings(), "a refused \(key.name) changed something")
                precondition(error.message.utf8.count <= 1_024, "a \(error.message.utf8.count)-byte error")
            }
        }
    }

    /// The service's owner as the client believes it; inputs whose sender is anything else are forgeries.
    static let owner = ":1.7"

    private static func client(_ bytes: [UInt8]) {
        guard let message = try? Message(wire: bytes), message.kind == .signal else { return }
        let signal = ServiceSignal(message, owner: owner, path: MonitorContract.objectPath, allTargets: true)
        if message.sender != owner { precondition(signal == nil, "a forged signal was believed") }
        guard let signal else { return }
        var snapshot = Snapshot([:])
        snapshot.update(signal.changed)
        precondition(
            snapshot.Status.isEmpty || MonitorContract.Status(rawValue: snapshot.Status) != nil,
            "Status \(snapshot.Status)")
        precondition(
            snapshot.Connectivity.isEmpty || MonitorContract.Connectivity(rawValue: snapshot.Connectivity) != nil)
        for format in MonitorFormat.allCases {
            let line = format.line(snapshot)
            precondition(
                !line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                "\(format) printed a control character")
            if format == .polybar {
                let inner = line.dropFirst("%{F#000000}".count).dropLast("%{F-}".count)
                precondition(!inner.replacingPairs().contains("%"), "polybar markup from the service")
            }
        }
        let screen = snapshot.screen()
        precondition(
            !screen.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) })
        _ = PrometheusText.render([(MonitorContract.objectPath, snapshot)])
    }

    private static func follower(_ bytes: [UInt8]) {
        guard let message = try? Message(wire: bytes) else { return }
        var table = RemoteObjectTable(
            interfaces: ["org.freedesktop.ModemManager1.Modem", "org.freedesktop.NetworkManager.Device"],
            objectLimit: 4)
        switch message.kind {
        case .methodReturn:
            _ = table.load(message)
            _ = table.refreshed(
                message, path: "/org/freedesktop/ModemManager1/Modem/0",
                interface: "org.freedesktop.ModemManager1.Modem")
        case .signal:
            // A table that already follows an object, so PropertiesChanged and InterfacesRemoved have something to act on.
            var loaded = RemoteObjectTable(interfaces: table.interfaces, objectLimit: table.objectLimit)
            if let seed = try? Message.signal(
                path: "/org/freedesktop/ModemManager1", interface: "org.freedesktop.DBus.ObjectManager",
                name: "InterfacesAdded"),
                (try? seed.append([
                    .objectPath("/org/freedesktop/ModemManager1/Modem/0"),
                    .dictionary(
                        key: .string, value: .dictionary(key: .string, value: .variant),
                        [
                            DBusDictEntry(
                                key: .string("org.freedesktop.ModemManager1.Modem"),
                                value: .variantMap([("AccessTechnologies", .uint32(16384))]))
                        ]),
                ])) != nil
            {
                _ = loaded.apply(seed)
            }
            _ = loaded.apply(message)
            table = loaded
        default:
            return
        }
        precondition(table.objects.count <= table.objectLimit, "\(table.objects.count) objects kept")
        precondition(
            table.objects.values.allSatisfy { $0.interfaces.keys.allSatisfy(table.interfaces.contains) },
            "an interface not followed was kept")
    }
}

private extension Substring {
    /// The text with every `%%` (an escaped percent sign) taken out.
    func replacingPairs() -> String {
        var out = ""
        var index = startIndex
        while index < endIndex {
            let next = self.index(after: index)
            if self[index] == "%", next < endIndex, self[next] == "%" {
                index = self.index(after: next)
                continue
            }
            out.append(self[index])
            index = next
        }
        return out
    }
}
