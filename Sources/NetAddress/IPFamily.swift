/// An IP address family: what routes, default routes and (soon) verdicts are kept per. The
/// kernel's number for it (AF_INET, AF_INET6) is met only where a message or a socket needs it.
public enum IPFamily: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case v4, v6

    /// AF_INET or AF_INET6.
    public var number: Int32 { self == .v4 ? IPAddress.familyIPv4 : IPAddress.familyIPv6 }

    /// The family the kernel numbers so; nil for any other family (AF_UNSPEC, AF_BRIDGE, …).
    public init?(number: some BinaryInteger) {
        switch Int32(truncatingIfNeeded: number) {
        case IPAddress.familyIPv4: self = .v4
        case IPAddress.familyIPv6: self = .v6
        default: return nil
        }
    }

    public var description: String { self == .v4 ? "IPv4" : "IPv6" }
}

extension IPAddress {
    public var ipFamily: IPFamily {
        switch self {
        case .v4: .v4
        case .v6: .v6
        }
    }
}
