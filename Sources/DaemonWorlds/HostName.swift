import Glibc

/// What INTERFACE.md accepts as a Host: an RFC 1123 name, an IPv4 dotted
/// quad, or an IPv6 literal with an optional `%zone`.
public enum HostName {
    /// No valid Host is longer (a name's 253 bytes and its trailing dot); checked before
    /// anything splits or copies a caller's string.
    public static let longest = 254

    public static func isValid(_ host: String) -> Bool {
        guard host.utf8.count <= longest else { return false }
        return isIPv4Literal(host) || isIPv6Literal(host) || isDNSName(host)
    }

    /// Four decimal octets 0–255, no leading zeros beyond a lone "0".
    public static func isIPv4Literal(_ s: String) -> Bool {
        guard s.utf8.count <= 15 else { return false }
        let parts = s.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ (0x30...0x39).contains($0) }) else { return false }
            if part.count > 1 && part.first == UInt8(ascii: "0") { return false }
            guard let value = Int(String(decoding: part, as: UTF8.self)), value <= 255 else { return false }
        }
        return true
    }

    /// An IPv6 address in text form (as inet_pton reads it), optionally with a `%zone`.
    public static func isIPv6Literal(_ s: String) -> Bool {
        guard s.utf8.count <= 45 + 16 else { return false }
        var address = s
        if let percent = s.firstIndex(of: "%") {
            let zone = s[s.index(after: percent)...]
            guard (1...15).contains(zone.utf8.count),
                zone.utf8.allSatisfy({
                    isAlnum($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
                })
            else { return false }
            address = String(s[..<percent])
        }
        guard address.contains(":"), !address.utf8.contains(0) else { return false }
        var buffer = in6_addr()
        return inet_pton(AF_INET6, address, &buffer) == 1
    }

    /// Labels of 1–63 letters, digits and hyphens, no hyphen at either end;
    /// at most 253 bytes without the one optional trailing dot; the last label
    /// not all digits (so it cannot be a malformed dotted quad).
    public static func isDNSName(_ s: String) -> Bool {
        var name = Substring(s)
        if name.hasSuffix(".") { name = name.dropLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            let bytes = label.utf8
            guard (1...63).contains(bytes.count),
                bytes.allSatisfy({ isAlnum($0) || $0 == UInt8(ascii: "-") }),
                bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-")
            else { return false }
        }
        if let last = labels.last, last.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { return false }
        return true
    }

    private static func isAlnum(_ c: UInt8) -> Bool {
        (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
    }
}
