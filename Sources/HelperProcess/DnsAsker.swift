import CResolv
import EventLoop
import Glibc
import MonitorRules
import NetAddress
import NetCore
import Timekeeping

/// DNS truth's questions as the helper asks them: through glibc's resolver library, to the
/// nameservers of /etc/resolv.conf in order (read again for each question), each with its share of
/// the limit; the next is asked only when one gives no answer, SERVFAIL or REFUSED.
package enum DnsAsker {
    /// systemd-resolved's stub listeners (INTERFACE.md: when resolv.conf names only these, resolved is asked).
    package static let stubs: Set<String> = ["127.0.0.53", "127.0.0.54"]

    /// Whether `resolvers` are systemd-resolved's stub and nothing else.
    package static func onlyStub(_ resolvers: [String]) -> Bool {
        !resolvers.isEmpty && resolvers.allSatisfy(stubs.contains)
    }

    /// The reply when resolv.conf names only the stub and `viaStub` is false: nothing was sent.
    package static let notAskedWords = "not asked: /etc/resolv.conf names systemd-resolved's stub"

    /// The reply when no nameserver is to be asked: a Host the hosts file names is that file's answer, as
    /// applications' lookups are (whatever resolv.conf says); then a resolv.conf naming no nameserver, or only
    /// resolved's stub when `viaStub` is false. nil: ask the `resolvers`.
    package static func answerWithoutAsking(
        _ question: DnsQuestion, resolvers: [String], viaStub: Bool,
        hosts: (_ name: String, _ family: IPFamily) -> [IPAddress]?
    ) -> DnsReply? {
        if question.kind == .host, let local = hosts(question.name, question.family) {
            return DnsReply(
                outcome: local.isEmpty ? .noData : .addresses(local), server: "", transport: .unknown,
                resolvers: resolvers)
        }
        if resolvers.isEmpty {
            return DnsReply(
                outcome: .noAnswer("/etc/resolv.conf names no nameserver"), transport: .unknown, resolvers: resolvers)
        }
        if !viaStub && onlyStub(resolvers) {
            return DnsReply(outcome: .noAnswer(notAskedWords), transport: .unknown, resolvers: resolvers)
        }
        return nil
    }

    package static func ask(_ question: DnsQuestion, limitSeconds: UInt32, viaStub: Bool = true) -> DnsReply {
        var servers = [sockaddr_storage](repeating: sockaddr_storage(), count: 3)
        let count = Int(servers.withUnsafeMutableBufferPointer { CResolv_servers($0.baseAddress, Int32($0.count)) })
        let names = servers.prefix(count).map(serverText)
        if let reply = answerWithoutAsking(question, resolvers: names, viaStub: viaStub, hosts: HostsFile.addresses) {
            return reply
        }
        let share = max(1, Int32(clamping: limitSeconds) / Int32(count))
        var reply = DnsReply(outcome: .noAnswer("not asked"), resolvers: names)
        for index in 0..<count {
            var result = CResolv_result()
            let started = MonotonicClock.now()
            let type: Int32 = question.family == .v4 ? 1 : 28
            guard CResolv_ask(question.name, type, Int32(index), share, &result) == 0 else { break }
            reply.roundTrip = MonotonicClock.now() - started
            reply.server = serverText(result.server)
            reply.transport = result.transport == Int32(CResolv_tcp) ? .tcp : .udp
            reply.outcome = outcome(result, family: question.family)
            switch reply.outcome {
            case .noAnswer, .servfail, .refused: continue
            default: return reply
            }
        }
        return reply
    }

    /// An answer to (`name`, `family`) as the library reads it (the fuzzer's way in).
    package static func read(answer: [UInt8], name: String, family: IPFamily) -> DnsOutcome {
        var result = CResolv_result()
        CResolv_read_answer(answer, Int32(clamping: answer.count), name, family == .v4 ? 1 : 28, &result)
        return outcome(result, family: family)
    }

    /// What the library made of the answer.
    package static func outcome(_ result: CResolv_result, family: IPFamily) -> DnsOutcome {
        switch Int(result.outcome) {
        case CResolv_addresses:
            var list: [IPAddress] = []
            withUnsafeBytes(of: result.addresses) { raw in
                for index in 0..<Int(min(max(result.address_count, 0), Int32(CResolv_maximum_addresses))) {
                    let bytes = raw[(index * 16)..<(index * 16 + (family == .v4 ? 4 : 16))]
                    if let address = IPAddress(bytes: Array(bytes)) { list.append(address) }
                }
            }
            return .addresses(list)
        case CResolv_nodata: return .noData
        case CResolv_nxdomain: return .nxdomain
        case CResolv_servfail: return .servfail
        case CResolv_refused: return .refused
        case CResolv_other_rcode: return .otherRcode(Int(result.rcode))
        case CResolv_malformed: return .noAnswer("a malformed answer")
        default:
            let error = result.error
            return .noAnswer(
                error == ETIMEDOUT ? "timed out" : error == ECONNREFUSED ? "refused or unreachable" : describe(error))
        }
    }

    private static func describe(_ error: Int32) -> String {
        guard let text = strerror(error) else { return "errno \(error)" }
        return String(cString: text)
    }

    /// Numeric, `%zone` for link-local, `#port` when neither 53 nor 853 (INTERFACE.md `DnsServer`).
    package static func serverText(_ storage: sockaddr_storage) -> String {
        var copy = storage
        let length = MemoryLayout<sockaddr_storage>.size
        return withUnsafeBytes(of: &copy) { raw -> String in
            guard let base = raw.baseAddress, var address = IPAddress(socketAddress: base, length: length) else {
                return ""
            }
            let port: UInt16
            if Int32(storage.ss_family) == AF_INET {
                port = UInt16(bigEndian: base.loadUnaligned(as: sockaddr_in.self).sin_port)
            } else {
                let six = base.loadUnaligned(as: sockaddr_in6.self)
                port = UInt16(bigEndian: six.sin6_port)
                if six.sin6_scope_id != 0, case .v6(let bytes, _) = address {
                    var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
                    let known = if_indextoname(six.sin6_scope_id, &name) != nil
                    address = .v6(
                        bytes,
                        zone: IPAddress.Zone(
                            index: six.sin6_scope_id,
                            name: known ? String(decoding: name.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self) : "")
                    )
                }
            }
            let text = address.description
            guard port != 53 && port != 853 else { return text }
            return "\(text)#\(port)"
        }
    }
}
