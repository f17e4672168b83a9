import Glibc
import NetAddress

extension IPAddress {
    /// Parses a numeric address; an IPv6 one may end in `%zone`, an interface name or index
    /// (which must name an interface here). The text is read by NetAddress's pure parser.
    public init?(_ text: String) {
        guard let parsed = IPAddress(numeric: text, interfaceIndex: Self.interfaceIndex) else { return nil }
        self = parsed.namingZone()
    }

    /// The index of the interface named `name` here (nil: none).
    public static func interfaceIndex(_ name: String) -> UInt32? {
        let index = if_nametoindex(name)
        return index == 0 ? nil : index
    }

    /// An IPv4 address in any form inet_aton(3) reads (`0x7f000001`, `127.1`, `0177.0.0.1`),
    /// as getaddrinfo and curl read a URL's host; nil for anything else.
    public init?(lenientIPv4 text: String) {
        var address = in_addr()
        guard !text.isEmpty, text.utf8.count <= 64, inet_aton(text, &address) != 0 else { return nil }
        self = withUnsafeBytes(of: &address) { .v4(AddressBytes($0)) }
    }

    /// The same address with its zone's interface named, as it will show (a system call: not per packet).
    public func namingZone() -> IPAddress {
        guard case .v6(let bytes, let zone) = self, zone.index != 0, zone.name.isEmpty else { return self }
        return .v6(bytes, zone: Self.zone(zone.index))
    }

    private static func zone(_ index: UInt32) -> Zone {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &name) != nil else { return Zone(index: index) }
        return Zone(
            index: index, name: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
