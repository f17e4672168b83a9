/// The rtnetlink flags, route types and errno values the rules read. They are the kernel's
/// ABI, fixed for good; ReachabilityTests hold each to the C headers' value.
public enum KernelNumbers {
    public static let linkUp: UInt32 = 0x1 // IFF_UP
    public static let linkRunning: UInt32 = 0x40 // IFF_RUNNING
    public static let linkLowerUp: UInt32 = 0x10000 // IFF_LOWER_UP
    public static let linkPointToPoint: UInt32 = 0x10 // IFF_POINTOPOINT
    public static let linkNoArp: UInt32 = 0x80 // IFF_NOARP
    public static let addressDuplicate: UInt32 = 0x08 // IFA_F_DADFAILED
    public static let addressDeprecated: UInt32 = 0x20 // IFA_F_DEPRECATED
    public static let addressTentative: UInt32 = 0x40 // IFA_F_TENTATIVE
    public static let mainTable: UInt32 = 254 // RT_TABLE_MAIN
    public static let routeUnicast: UInt8 = 1 // RTN_UNICAST
    public static let routeLocal: UInt8 = 2 // RTN_LOCAL
    public static let routeBlackhole: UInt8 = 6 // RTN_BLACKHOLE
    public static let routeUnreachable: UInt8 = 7 // RTN_UNREACHABLE
    public static let routeProhibit: UInt8 = 8 // RTN_PROHIBIT
    public static let routeThrow: UInt8 = 9 // RTN_THROW
    public static let errorAccess: Int32 = 13 // EACCES
    public static let errorInvalid: Int32 = 22 // EINVAL
    public static let errorNetworkUnreachable: Int32 = 101 // ENETUNREACH
    public static let errorHostUnreachable: Int32 = 113 // EHOSTUNREACH
}
