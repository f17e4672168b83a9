import Glibc

/// An IPv4 or IPv6 address as network-order bytes. An IPv6 address may carry a zone:
/// the index of the interface a link-local address belongs to (`fe80::1%eth0`), without
/// which it cannot be sent to nor routed.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4([UInt8])
    case v6([UInt8], zone: UInt32 = 0)

    /// From raw bytes: 4 make IPv4, 16 make IPv6, anything else nil.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4: self = .v4(Array(bytes))
        case 16: self = .v6(Array(bytes))
        default: return nil
        }
    }

    /// Parses a numeric address; an IPv6 one may end in `%zone`, an interface name or index.
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = withUnsafeBytes(of: &v4) { .v4(Array($0)) }
            return
        }
        let parts = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        var v6 = in6_addr()
        guard let first = parts.first, inet_pton(AF_INET6, String(first), &v6) == 1 else { return nil }
        var zone: UInt32 = 0
        if parts.count == 2 {
            let name = String(parts[1])
            zone = UInt32(name) ?? if_nametoindex(name)
            guard zone != 0 else { return nil }
        }
        self = withUnsafeBytes(of: &v6) { .v6(Array($0), zone: zone) }
    }

    public var bytes: [UInt8] {
        switch self {
        case .v4(let b), .v6(let b, _): b
        }
    }

    /// The interface index of an IPv6 address's zone; 0 when it has none.
    public var zone: UInt32 {
        if case .v6(_, let zone) = self { return zone }
        return 0
    }

    /// AF_INET and AF_INET6, for code that keeps away from Glibc.
    public static let familyIPv4 = AF_INET
    public static let familyIPv6 = AF_INET6

    /// AF_INET or AF_INET6.
    public var family: Int32 {
        switch self {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }

    public var bitLength: UInt8 {
        switch self {
        case .v4: 32
        case .v6: 128
        }
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard ok != nil else { return "?" }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard zone != 0 else { return text }
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(zone, &name) != nil else { return text + "%\(zone)" }
        return text + "%" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension IPAddress {
    /// An IPv4 address in any form inet_aton(3) reads (`0x7f000001`, `127.1`, `0177.0.0.1`),
    /// as getaddrinfo and curl read a URL's host; nil for anything else.
    public init?(lenientIPv4 text: String) {
        var address = in_addr()
        guard !text.isEmpty, text.utf8.count <= 64, inet_aton(text, &address) != 0 else { return nil }
        self = withUnsafeBytes(of: &address) { .v4(Array($0)) }
    }

    /// Loopback, link-local, unspecified (or "this network"), multicast or broadcast: an
    /// address that leads into this machine or its link rather than out to the Internet.
    /// An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
    public var pointsInward: Bool {
        let b = bytes
        switch self {
        case .v4:
            guard b.count == 4 else { return false }
            return b[0] == 127 || b[0] == 0 || (b[0] == 169 && b[1] == 254) || b[0] >= 224
        case .v6:
            guard b.count == 16 else { return false }
            if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF {
                return IPAddress.v4(Array(b[12..<16])).pointsInward
            }
            let unspecifiedOrLoopback = b[0..<15].allSatisfy { $0 == 0 } && (b[15] == 0 || b[15] == 1)
            return unspecifiedOrLoopback || (b[0] == 0xFE && b[1] & 0xC0 == 0x80) || b[0] == 0xFF
        }
    }
}
