/// An IPv4 or IPv6 address as network-order bytes. An IPv6 address may carry a zone:
/// the interface a link-local address belongs to (`fe80::1%eth0`), without which it
/// cannot be sent to nor routed. Pure: reading addresses from text and sockets is NetCore's.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(AddressBytes)
    case v6(AddressBytes, zone: Zone = .none)

    /// An IPv6 address's interface: its index is what the kernel reads; the name, when
    /// known, is only what the address shows.
    public struct Zone: Hashable, Sendable {
        public let index: UInt32
        public let name: String

        public static let none = Zone(index: 0)

        public init(index: UInt32, name: String = "") {
            self.index = index
            self.name = name
        }

        public static func == (a: Zone, b: Zone) -> Bool { a.index == b.index }
        public func hash(into hasher: inout Hasher) { hasher.combine(index) }
    }

    /// From raw bytes: 4 make IPv4, 16 make IPv6, anything else nil.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4: self = .v4(AddressBytes(bytes))
        case 16: self = .v6(AddressBytes(bytes))
        default: return nil
        }
    }

    public var bytes: AddressBytes {
        switch self {
        case .v4(let b), .v6(let b, _): b
        }
    }

    /// The interface index of an IPv6 address's zone; 0 when it has none.
    public var zone: UInt32 {
        if case .v6(_, let zone) = self { return zone.index }
        return 0
    }

    /// AF_INET and AF_INET6: the kernel's numbers, fixed by its ABI (NetCore's tests hold them to Glibc's).
    public static let familyIPv4: Int32 = 2
    public static let familyIPv6: Int32 = 10

    /// AF_INET or AF_INET6.
    public var family: Int32 {
        switch self {
        case .v4: Self.familyIPv4
        case .v6: Self.familyIPv6
        }
    }

    public var bitLength: UInt8 {
        switch self {
        case .v4: 32
        case .v6: 128
        }
    }

    /// The text form inet_ntop(3) writes (RFC 5952), then `%` and the zone's name (or index).
    public var description: String {
        switch self {
        case .v4(let b):
            guard b.count == 4 else { return "?" }
            return Self.dotted(b[...])
        case .v6(let b, let zone):
            guard b.count == 16 else { return "?" }
            let text = Self.colonHex(b)
            guard zone.index != 0 else { return text }
            return text + "%" + (zone.name.isEmpty ? String(zone.index) : zone.name)
        }
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
            let plain = unmapped
            if case .v4 = plain { return plain.pointsInward }
            let unspecifiedOrLoopback = b[0..<15].allSatisfy { $0 == 0 } && (b[15] == 0 || b[15] == 1)
            return unspecifiedOrLoopback || (b[0] == 0xFE && b[1] & 0xC0 == 0x80) || b[0] == 0xFF
        }
    }

    /// The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d) carries; any other address as it is.
    public var unmapped: IPAddress {
        let b = bytes
        guard case .v6 = self, b.count == 16, b[0..<10].allSatisfy({ $0 == 0 }), b[10] == 0xFF, b[11] == 0xFF else {
            return self
        }
        return .v4(AddressBytes(b[12..<16]))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func dotted(_ b: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: 15) { buffer in
            var at = 0
            for (i, byte) in b.enumerated() {
                if i > 0 { buffer[at] = UInt8(ascii: "."); at += 1 }
                if byte >= 100 { buffer[at] = 0x30 + byte / 100; at += 1 }
                if byte >= 10 { buffer[at] = 0x30 + byte / 10 % 10; at += 1 }
                buffer[at] = 0x30 + byte % 10
                at += 1
            }
            return at
        }
    }

    /// Eight groups in lower-case hex without leading zeros; the longest run of two or more
    /// zero groups (the first of equals) as `::`; the last 32 bits dotted after `::` alone
    /// (IPv4-compatible) or `::ffff:` (IPv4-mapped), as glibc writes them.
    private static func colonHex(_ b: AddressBytes) -> String {
        let groups = (0..<8).map { UInt16(b[2 * $0]) << 8 | UInt16(b[2 * $0 + 1]) }
        var best = (start: -1, length: 0)
        var run = (start: -1, length: 0)
        for (i, group) in groups.enumerated() {
            if group == 0 {
                run = run.start < 0 ? (i, 1) : (run.start, run.length + 1)
                if run.length > best.length { best = run }
            } else {
                run = (-1, 0)
            }
        }
        if best.length < 2 { best = (-1, 0) }
        if best.start == 0 && (best.length == 6 || (best.length == 5 && groups[5] == 0xFFFF)) {
            return (best.length == 6 ? "::" : "::ffff:") + dotted(b[12..<16])
        }
        return String(unsafeUninitializedCapacity: 39) { buffer in
            var at = 0
            var i = 0
            while i < 8 {
                if i == best.start {
                    buffer[at] = UInt8(ascii: ":"); buffer[at + 1] = UInt8(ascii: ":"); at += 2
                    i += best.length
                    continue
                }
                if at > 0 && buffer[at - 1] != UInt8(ascii: ":") { buffer[at] = UInt8(ascii: ":"); at += 1 }
                let group = groups[i]
                var shift = 12
                while shift > 0 && (group >> UInt16(shift)) & 0xF == 0 { shift -= 4 }
                while shift >= 0 {
                    buffer[at] = hexDigits[Int((group >> UInt16(shift)) & 0xF)]
                    at += 1
                    shift -= 4
                }
                i += 1
            }
            return at
        }
    }
}
