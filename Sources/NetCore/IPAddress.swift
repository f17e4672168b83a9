import Glibc

/// An IPv4 or IPv6 address as network-order bytes.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4([UInt8])
    case v6([UInt8])

    /// From raw bytes: 4 make IPv4, 16 make IPv6, anything else nil.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4: self = .v4(Array(bytes))
        case 16: self = .v6(Array(bytes))
        default: return nil
        }
    }

    /// Parses a numeric address (no zone).
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = withUnsafeBytes(of: &v4) { .v4(Array($0)) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = withUnsafeBytes(of: &v6) { .v6(Array($0)) }
            return
        }
        return nil
    }

    public var bytes: [UInt8] {
        switch self {
        case .v4(let b), .v6(let b): b
        }
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
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
