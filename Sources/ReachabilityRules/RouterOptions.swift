import NetAddress

/// The options of a router advertisement that the kernel hands to user space (RTM_NEWNDUSEROPT:
/// the ones it does not act on itself), read without trusting them: a router is input from the
/// network. Free of I/O and of the C headers; the numbers are RFC 4861's, RFC 8781's and RFC 8910's.
public enum RouterOption: Equatable, Sendable {
    /// RFC 8781 PREF64: the network's NAT64 prefix, for `lifetimeSeconds` (0 withdraws it).
    case pref64(Nat64Prefix, lifetimeSeconds: UInt32)
    /// RFC 8910: the network's captive-portal API URI (RFC 8908), printable ASCII.
    case captivePortal(String)
    /// RFC 4861 4.6.1: the sender's link-layer address (an Ethernet one: 6 bytes). The kernel never passes it on;
    /// a whole advertisement read from a socket carries it.
    case sourceLinkLayer([UInt8])

    public static let pref64Type: UInt8 = 38
    public static let captivePortalType: UInt8 = 37
    public static let sourceLinkLayerType: UInt8 = 1
    /// A captive-portal URI longer than this is not taken (as for CheckURL).
    public static let longestPortalURI = 1024

    /// The options in `bytes` (each: type, length in units of 8 bytes, body), and a line for each
    /// malformed one. Unknown types are skipped; a length of 0 or one running past the end ends the
    /// reading (nothing after it can be framed).
    public static func parse(_ bytes: [UInt8]) -> (options: [RouterOption], malformed: [String]) {
        var options: [RouterOption] = []
        var malformed: [String] = []
        var offset = 0
        while offset + 2 <= bytes.count {
            let type = bytes[offset]
            let length = Int(bytes[offset + 1]) * 8
            guard length > 0, offset + length <= bytes.count else {
                malformed.append("option \(type): length \(length) at offset \(offset) of \(bytes.count) bytes")
                break
            }
            let body = bytes[offset + 2..<offset + length]
            if type == pref64Type {
                switch Self.pref64(body) {
                case .success(let option): options.append(option)
                case .failure(let why): malformed.append("PREF64: \(why.text)")
                }
            } else if type == sourceLinkLayerType, length == 8 {
                options.append(.sourceLinkLayer(Array(body.prefix(6))))
            } else if type == captivePortalType {
                switch Self.captivePortal(body) {
                case .success(let option): options.append(option)
                case .failure(let why): malformed.append("captive portal: \(why.text)")
                }
            }
            offset += length
        }
        if offset < bytes.count && malformed.isEmpty {
            malformed.append("\(bytes.count - offset) bytes after the last option")
        }
        return (options, malformed)
    }

    public struct Malformed: Error, Equatable {
        public let text: String
    }

    /// A router advertisement as it arrived (RFC 4861 4.2: type 134, code 0, 16 bytes of header, then options)
    /// from `source` with `hopLimit`: its options, or nil when it is no advertisement a router on the link sent
    /// (6.1.2: from a link-local address, hop limit 255).
    public static func advertisementOptions(_ packet: [UInt8], source: IPAddress, hopLimit: Int32) -> [UInt8]? {
        guard hopLimit == 255, packet.count >= 16, packet[0] == 134, packet[1] == 0,
            case .v6(let bytes, _) = source, bytes[0] == 0xfe, bytes[1] & 0xc0 == 0x80
        else { return nil }
        return Array(packet[16...])
    }

    /// RFC 8910 section 2.3: the URI, padded with NUL bytes to the option's length. Only printable
    /// ASCII is taken (it goes into logs and onto the bus as it is); the URN for "no portal" is one.
    static func captivePortal(_ body: ArraySlice<UInt8>) -> Result<RouterOption, Malformed> {
        var end = body.endIndex
        while end > body.startIndex, body[end - 1] == 0 { end -= 1 }
        let uri = body[body.startIndex..<end]
        guard !uri.isEmpty else { return .failure(Malformed(text: "no URI")) }
        guard uri.count <= longestPortalURI else { return .failure(Malformed(text: "a URI of \(uri.count) bytes")) }
        guard uri.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(Malformed(text: "a URI with bytes that are not printable ASCII"))
        }
        return .success(.captivePortal(String(decoding: uri, as: UTF8.self)))
    }

    /// RFC 8781 section 4: 13 bits of lifetime in units of 8 s, 3 bits of prefix length code, 96 bits of prefix.
    static func pref64(_ body: ArraySlice<UInt8>) -> Result<RouterOption, Malformed> {
        guard body.count == 14 else { return .failure(Malformed(text: "length \(body.count + 2), not 16")) }
        let start = body.startIndex
        let field = UInt16(body[start]) << 8 | UInt16(body[start + 1])
        let lifetime = UInt32(field >> 3) * 8
        let lengths: [UInt8] = [96, 64, 56, 48, 40, 32]
        let code = Int(field & 0x7)
        guard code < lengths.count else {
            return .failure(Malformed(text: "prefix length code \(code) is not defined"))
        }
        var prefix = [UInt8](repeating: 0, count: 16)
        for index in 0..<12 { prefix[index] = body[start + 2 + index] }
        let length = lengths[code]
        // Bits past the prefix length are ignored (RFC 8781: the receiver clears them).
        for bit in Int(length)..<96 { prefix[bit / 8] &= ~(UInt8(0x80) >> UInt8(bit % 8)) }
        return .success(
            .pref64(Nat64Prefix(prefix: .v6(AddressBytes(prefix)), length: length), lifetimeSeconds: lifetime))
    }
}

/// A NAT64 prefix (RFC 6052): an IPv6 prefix of 32, 40, 48, 56, 64 or 96 bits under which IPv4
/// addresses are reached.
public struct Nat64Prefix: Hashable, Sendable, CustomStringConvertible {
    public let prefix: IPAddress
    public let length: UInt8

    public init(prefix: IPAddress, length: UInt8) {
        self.prefix = prefix
        self.length = length
    }

    public static let validLengths: [UInt8] = [32, 40, 48, 56, 64, 96]

    /// As `64:ff9b::/96`.
    public var description: String { "\(prefix)/\(length)" }

    /// The IPv6 address at which `address` (IPv4) is reached through this prefix (RFC 6052 section
    /// 2.2: the IPv4 bits around the reserved octet 8); nil for an IPv6 address.
    public func synthesize(_ address: IPAddress) -> IPAddress? {
        guard case .v4(let v4) = address, case .v6(var bytes, _) = prefix, Self.validLengths.contains(length) else {
            return nil
        }
        var position = Int(length) / 8
        for octet in v4 {
            if position == 8 { position += 1 }
            bytes[position] = octet
            position += 1
        }
        if length < 96 { bytes[8] = 0 }
        return .v6(bytes)
    }

    /// The IPv4 address `address` carries under this prefix, if it is under it.
    public func extract(_ address: IPAddress) -> IPAddress? {
        guard case .v6(let bytes, _) = address, case .v6(let own, _) = prefix, Self.validLengths.contains(length),
            bytes.prefix(Int(length) / 8).elementsEqual(own.prefix(Int(length) / 8))
        else { return nil }
        var v4: [UInt8] = []
        var position = Int(length) / 8
        while v4.count < 4 {
            if position == 8 { position += 1 }
            v4.append(bytes[position])
            position += 1
        }
        return .v4(AddressBytes(v4))
    }

    /// RFC 7050: the prefix an AAAA answer for `ipv4only.arpa` reveals, the longest length first
    /// under which it carries 192.0.0.170 or 192.0.0.171.
    /// A prefix a NAT64 can have: none of loopback, unspecified, IPv4-mapped or -compatible (the first 80 bits
    /// zero), link-local (fe80::/10) or multicast (ff00::/8).
    public var isGlobalUnicast: Bool {
        guard case .v6(let bytes, _) = prefix else { return false }
        if bytes.prefix(10).allSatisfy({ $0 == 0 }) { return false }
        if bytes[0] == 0xff { return false }
        return !(bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80)
    }

    /// Whether `prefix` lies inside `network`/`length` (an interface's own on-link prefix).
    public static func covers(network: IPAddress, length: UInt8, prefix: Nat64Prefix) -> Bool {
        guard case .v6(let net, _) = network, case .v6(let own, _) = prefix.prefix, prefix.length >= length,
            length <= 128
        else {
            return false
        }
        let whole = Int(length) / 8
        guard net.prefix(whole).elementsEqual(own.prefix(whole)) else { return false }
        let bits = Int(length) % 8
        guard bits > 0 else { return true }
        let mask = UInt8(0xff) << (8 - bits)
        return net[whole] & mask == own[whole] & mask
    }

    public static func discovered(in answers: [IPAddress]) -> Nat64Prefix? {
        let wellKnown: [IPAddress] = [.v4([192, 0, 0, 170]), .v4([192, 0, 0, 171])]
        for answer in answers {
            guard case .v6(let bytes, _) = answer else { continue }
            for length in validLengths.reversed() {
                var prefix = [UInt8](repeating: 0, count: 16)
                for index in 0..<Int(length) / 8 { prefix[index] = bytes[index] }
                let candidate = Nat64Prefix(prefix: .v6(AddressBytes(prefix)), length: length)
                if let carried = candidate.extract(answer), wellKnown.contains(carried) {
                    // A resolver's word is held to the same bounds as a router's.
                    return candidate.isGlobalUnicast ? candidate : nil
                }
            }
        }
        return nil
    }
}
