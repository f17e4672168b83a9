/// Numeric addresses read from text, as inet_pton(3) reads them, without libc: an IPv4 address in four
/// decimal parts (no leading zeros), an IPv6 one as RFC 4291 writes it (one `::` standing for at least one
/// group, a dotted IPv4 tail), and an IPv6 one's `%zone` — a number, or an interface name that
/// `interfaceIndex` looks up (the one step that asks the system; it is the caller's).
extension IPAddress {
    public init?(numeric text: String, interfaceIndex: (String) -> UInt32? = { _ in nil }) {
        let utf8 = Array(text.utf8)
        if let v4 = Self.ipv4Bytes(utf8[...]) {
            self = .v4(AddressBytes(v4))
            return
        }
        let percent = utf8.firstIndex(of: UInt8(ascii: "%"))
        guard let v6 = Self.ipv6Bytes(utf8[..<(percent ?? utf8.endIndex)]) else { return nil }
        guard let percent else {
            self = .v6(AddressBytes(v6))
            return
        }
        let name = String(decoding: utf8[(percent + 1)...], as: UTF8.self)
        guard !name.isEmpty else { return nil }
        if let number = UInt32(name) {
            guard number != 0 else { return nil }
            self = .v6(AddressBytes(v6), zone: Zone(index: number))
        } else {
            guard let index = interfaceIndex(name), index != 0 else { return nil }
            self = .v6(AddressBytes(v6), zone: Zone(index: index, name: name))
        }
    }

    /// Four decimal parts of 0–255, none with a leading zero.
    static func ipv4Bytes(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        var value = 0
        var digits = 0
        for character in text {
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if digits > 0 && value == 0 { return nil }
                value = value * 10 + Int(character - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return nil }
            case UInt8(ascii: "."):
                guard digits > 0, bytes.count < 3 else { return nil }
                bytes.append(UInt8(value))
                value = 0
                digits = 0
            default:
                return nil
            }
        }
        guard digits > 0, bytes.count == 3 else { return nil }
        bytes.append(UInt8(value))
        return bytes
    }

    /// Up to eight groups of one to four hex digits; one `::` standing for one or more zero groups; the last
    /// 32 bits may be written as a dotted IPv4 address.
    static func ipv6Bytes(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var groups: [UInt16] = []
        var gap: Int?
        var index = text.startIndex
        if text.starts(with: [UInt8(ascii: ":")]) {
            guard text.dropFirst().first == UInt8(ascii: ":") else { return nil }
            index += 1
        }
        var groupStart = index
        var value: UInt32 = 0
        var digits = 0
        while index < text.endIndex {
            let character = text[index]
            if let digit = Self.hexValue(character) {
                guard digits < 4 else { return nil }
                value = value << 4 | UInt32(digit)
                digits += 1
            } else if character == UInt8(ascii: ":") {
                if digits == 0 {
                    // An empty group is the one `::`.
                    guard gap == nil, index > text.startIndex, text[index - 1] == UInt8(ascii: ":") else { return nil }
                    gap = groups.count
                } else {
                    guard index + 1 < text.endIndex, groups.count < 8 else { return nil }
                    groups.append(UInt16(value))
                }
                value = 0
                digits = 0
                groupStart = index + 1
            } else if character == UInt8(ascii: "."), groups.count <= 6 {
                guard let tail = Self.ipv4Bytes(text[groupStart...]) else { return nil }
                groups.append(UInt16(tail[0]) << 8 | UInt16(tail[1]))
                groups.append(UInt16(tail[2]) << 8 | UInt16(tail[3]))
                digits = 0
                index = text.endIndex
                break
            } else {
                return nil
            }
            index += 1
        }
        if digits > 0 {
            guard groups.count < 8 else { return nil }
            groups.append(UInt16(value))
        }
        if let gap {
            guard groups.count < 8 else { return nil }
            groups.insert(contentsOf: [UInt16](repeating: 0, count: 8 - groups.count), at: gap)
        }
        guard groups.count == 8 else { return nil }
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
