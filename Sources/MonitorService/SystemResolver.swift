import DBusKit
import DaemonWorlds
import EventLoop
import Glibc
import HelperProcess
import MonitorRules
import NetAddress
import Timekeeping

/// DNS truth's questions asked the way applications' lookups go (INTERFACE.md "Fresh lookups"): the
/// helper asks the nameservers of /etc/resolv.conf, unless they are only systemd-resolved's stub and
/// resolved is on the system bus; then resolved is asked over D-Bus, past its cache, and says whether
/// the answer came over an encrypted transport. Without resolved on the bus, the stub is asked as any
/// nameserver. Everything here is asynchronous on the loop.
public final class SystemResolver: DnsAsking {
    private let loop: MainLoop
    private let helper: BlockingHelper
    private let systemBus: () -> BusConnection?
    private let resolvedOwner: () -> String?

    static let manager = "org.freedesktop.resolve1.Manager"
    static let link = "org.freedesktop.resolve1.Link"
    static let path = "/org/freedesktop/resolve1"
    /// sd-resolved's flags (resolved-def.h).
    static let noCache: UInt64 = 1 << 12
    static let confidential: UInt64 = 1 << 18

    /// `systemBus` and `resolvedOwner`: the system-bus follower's connection and resolved's name on it, when known.
    package init(
        loop: MainLoop, helper: BlockingHelper, systemBus: @escaping () -> BusConnection?,
        resolvedOwner: @escaping () -> String?
    ) {
        self.loop = loop
        self.helper = helper
        self.systemBus = systemBus
        self.resolvedOwner = resolvedOwner
    }

    public func ask(
        _ question: DnsQuestion, interface: String, limitSeconds: UInt32, completion: @escaping (DnsReply) -> Void
    ) {
        helper.askDns(question, limitSeconds: limitSeconds, viaStub: false) { [weak self] reply in
            guard let self, reply.server.isEmpty, DnsAsker.onlyStub(reply.resolvers) else { return completion(reply) }
            if let bus = systemBus(), let owner = resolvedOwner() {
                ResolvedQuestion(
                    question, bus: bus, owner: owner, interface: interface, limitSeconds: limitSeconds,
                    resolvers: reply.resolvers, loop: loop, completion: completion
                ).send()
            } else {
                helper.askDns(question, limitSeconds: limitSeconds, viaStub: true, completion: completion)
            }
        }
    }
}

/// One question to resolved: ResolveHostname with SD_RESOLVED_NO_CACHE, and its DNSOverTLS setting (the
/// Manager's, and the route's link's, which wins when set), answered together once all three are in.
private final class ResolvedQuestion {
    private let question: DnsQuestion
    private let bus: BusConnection
    private let owner: String
    private let interfaceIndex: UInt32
    private let limitMilliseconds: Int32
    private let resolvers: [String]
    private let loop: MainLoop
    private let completion: (DnsReply) -> Void
    private var outcome: DnsOutcome?
    private var confidential = false
    private var roundTrip = Duration.zero
    private var managerSetting: String?
    private var linkSetting: String?

    init(
        _ question: DnsQuestion, bus: BusConnection, owner: String, interface: String, limitSeconds: UInt32,
        resolvers: [String], loop: MainLoop, completion: @escaping (DnsReply) -> Void
    ) {
        self.question = question
        self.bus = bus
        self.owner = owner
        interfaceIndex = interface.isEmpty ? 0 : if_nametoindex(interface)
        limitMilliseconds = Int32(clamping: Int(limitSeconds) * 1000)
        self.resolvers = resolvers
        self.loop = loop
        self.completion = completion
        if interfaceIndex == 0 { linkSetting = "" }
    }

    func send() {
        let started = loop.now()
        do {
            let call = try Message.methodCall(
                destination: owner, path: SystemResolver.path, interface: SystemResolver.manager,
                member: "ResolveHostname")
            try call.append([
                .int32(0), .string(question.name), .int32(question.family == .v4 ? AF_INET : AF_INET6),
                .uint64(SystemResolver.noCache),
            ])
            bus.send(call, timeoutMilliseconds: limitMilliseconds) { [self] result in
                roundTrip = loop.now() - started
                (outcome, confidential) = ResolvedReply.read(result, family: question.family)
                finish()
            }
        } catch {
            outcome = .noAnswer("cannot ask systemd-resolved: \(error.message)")
        }
        setting(path: SystemResolver.path, interface: SystemResolver.manager) { [self] in
            managerSetting = $0
            finish()
        }
        if interfaceIndex != 0 {
            setting(path: ResolvedLink.path(interfaceIndex), interface: SystemResolver.link) { [self] in
                linkSetting = $0
                finish()
            }
        }
        finish()
    }

    private func setting(path: String, interface: String, _ done: @escaping (String) -> Void) {
        guard
            let call = try? Message.methodCall(
                destination: owner, path: path, interface: "org.freedesktop.DBus.Properties", member: "Get"),
            (try? call.append([.string(interface), .string("DNSOverTLS")])) != nil
        else { return done("") }
        bus.send(call, timeoutMilliseconds: limitMilliseconds) { result in
            guard case .success(let reply) = result, case .variant(.string(let value))? = try? reply.arguments().first
            else { return done("") }
            done(value)
        }
    }

    private func finish() {
        guard let outcome, let managerSetting, let linkSetting else { return }
        self.outcome = nil
        let setting = linkSetting.isEmpty ? managerSetting : linkSetting
        let answered = if case .addresses = outcome { true } else { outcome == .noData }
        completion(
            DnsReply(
                outcome: outcome, server: "resolved", transport: confidential ? .tls : .unknown, roundTrip: roundTrip,
                // An error reply carries no flags: whether it came encrypted is not known.
                encryptionExpected: answered && (setting == "yes" || setting == "opportunistic"),
                resolvers: resolvers))
    }
}

/// What systemd-resolved's ResolveHostname answers, read (the fuzzer's way in too).
package enum ResolvedReply {
    /// More addresses than any name has in a DNS answer of 64 KiB: a reply with more is not read.
    package static let mostAddresses = 4096

    /// ResolveHostname's reply (a(iiay) addresses, s canonical name, t flags), or its error, as an outcome.
    package static func read(_ result: Result<Message, DBusError>, family: IPFamily) -> (DnsOutcome, confidential: Bool)
    {
        switch result {
        case .failure(let error):
            return (outcome(ofError: error.name, message: error.message), false)
        case .success(let reply):
            // Counted before it is decoded: whoever owns resolve1's name may answer with millions (issue 54 N33).
            guard reply.signature == "a(iiay)st", let count = reply.firstArrayCount else {
                return (.noAnswer("systemd-resolved answered in an unexpected form"), false)
            }
            guard count <= mostAddresses else {
                return (
                    .noAnswer("systemd-resolved answered with \(count) addresses (at most \(mostAddresses) are read)"),
                    false
                )
            }
            guard let arguments = try? reply.arguments(), arguments.count == 3,
                case .array(_, let entries) = arguments[0], case .uint64(let flags) = arguments[2]
            else { return (.noAnswer("systemd-resolved answered in an unexpected form"), false) }
            var addresses: [IPAddress] = []
            for entry in entries {
                guard case .structure(let fields) = entry, fields.count == 3, case .array(_, let raw) = fields[2]
                else { continue }
                let bytes = raw.compactMap { value -> UInt8? in
                    if case .byte(let byte) = value { return byte }
                    return nil
                }
                if let address = IPAddress(bytes: bytes), address.ipFamily == family { addresses.append(address) }
            }
            return (addresses.isEmpty ? .noData : .addresses(addresses), flags & SystemResolver.confidential != 0)
        }
    }

    /// resolved's errors (resolved-bus.c): a DNS rcode as `org.freedesktop.resolve1.DnsError.RCODE`,
    /// NoSuchRR for a name without records of the type; anything else got no answer.
    package static func outcome(ofError name: String, message: String) -> DnsOutcome {
        let rcode = "org.freedesktop.resolve1.DnsError."
        switch name {
        case rcode + "NXDOMAIN": return .nxdomain
        case rcode + "SERVFAIL": return .servfail
        case rcode + "REFUSED": return .refused
        case "org.freedesktop.resolve1.NoSuchRR": return .noData
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
            "org.freedesktop.DBus.Error.TimedOut":
            return .noAnswer("timed out")
        default:
            if name.hasPrefix(rcode) { return .otherRcode(-1) }
            return .noAnswer("systemd-resolved: \(String(message.prefix(160)))")
        }
    }
}

/// resolved's objects for links.
package enum ResolvedLink {
    /// Link `index`'s object (sd_bus_path_encode escapes a leading digit: `_3` and the digit).
    package static func path(_ index: UInt32) -> String {
        SystemResolver.path + "/link/_3" + String(index)
    }
}
