import NetAddress
import Timekeeping

/// `Dns` (INTERFACE.md "DNS truth"): what fresh lookups, past every cache, say of the resolver path.
public enum DnsHealth: String, CaseIterable, Sendable {
    case unknown, ok, slow, failing, intercepted, unencrypted
}

/// `DnsTransport`: how the last fresh lookup was answered ("" unknown: a plain answer from resolved).
public enum DnsTransport: String, CaseIterable, Sendable {
    case unknown = ""
    case udp, tcp, tls
}

/// What a DNS question got back, as the resolver library read it.
public enum DnsOutcome: Equatable, Sendable {
    /// Addresses of the type asked.
    case addresses([IPAddress])
    /// The name exists without addresses of that type.
    case noData
    case nxdomain
    case servfail
    case refused
    /// Another rcode (FORMERR, NOTIMP, …).
    case otherRcode(Int)
    /// Nothing usable came back within the limit: why.
    case noAnswer(String)

    /// Words for a Reason: "no answer (timed out)", "SERVFAIL", …
    public var words: String {
        switch self {
        case .addresses(let list): "\(list.count) address\(list.count == 1 ? "" : "es")"
        case .noData: "no addresses"
        case .nxdomain: "NXDOMAIN"
        case .servfail: "SERVFAIL"
        case .refused: "REFUSED"
        case .otherRcode(let code): "rcode \(code)"
        case .noAnswer(let why): "no answer (\(why))"
        }
    }
}

/// One DNS question's answer, as the daemon's helper (or resolved) gave it.
public struct DnsReply: Equatable, Sendable {
    public var outcome: DnsOutcome
    /// Who answered (INTERFACE.md `DnsServer`), "" when nobody did.
    public var server: String
    public var transport: DnsTransport
    public var roundTrip: Duration
    /// The system resolver is set to DNS-over-TLS (resolved's `DNSOverTLS`, `yes` or `opportunistic`).
    public var encryptionExpected: Bool
    /// The nameservers the lookup could ask, in order (a change is a network change: interception is asked again).
    public var resolvers: [String]

    public init(
        outcome: DnsOutcome, server: String = "", transport: DnsTransport = .udp, roundTrip: Duration = .zero,
        encryptionExpected: Bool = false, resolvers: [String] = []
    ) {
        self.outcome = outcome
        self.server = server
        self.transport = transport
        self.roundTrip = roundTrip
        self.encryptionExpected = encryptionExpected
        self.resolvers = resolvers
    }
}

/// Which of the three questions a lookup is.
public enum DnsQuestionKind: Int, CaseIterable, Hashable, Sendable {
    /// Host's name, with the cache bypassed.
    case host
    /// A random label under DnsProbeZone, which no cache can hold.
    case probeZone
    /// A random label under `invalid.` (RFC 6761): any address is interception.
    case interception
}

/// A question to ask: `name`'s records of `family` (A for IPv4, AAAA for IPv6).
public struct DnsQuestion: Equatable, Sendable {
    public var kind: DnsQuestionKind
    public var name: String
    public var family: IPFamily

    public init(kind: DnsQuestionKind, name: String, family: IPFamily) {
        self.kind = kind
        self.name = name
        self.family = family
    }
}

/// The DNS truth of a target, as the properties show it.
public struct DnsView: Equatable, Sendable {
    public var health: DnsHealth = .unknown
    public var server = ""
    public var transport: DnsTransport = .unknown
    public var roundTripTime: UInt64 = 0
    /// While `failing`: the Reason's words ("DNS fails: new lookups of NAME: why (cached answers may still work)").
    public var failure: String?

    public init() {}
}
