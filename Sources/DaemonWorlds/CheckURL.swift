/// What INTERFACE.md accepts as CheckURL: "" (off), or `http://` + a host as for
/// Host (or a bracketed IPv6 literal) + an optional port + an optional path (and
/// query), at most 1,024 bytes. No user info, no fragment, nothing outside
/// printable ASCII: the URL goes to curl and into logs as it is.
public enum CheckURL {
    public static let longest = 1024
    static let scheme = "http://"
    static let secureScheme = "https://"

    /// CheckURL's rule; `secure`: SecureCheckURL's, the same with `https://`.
    public static func isValid(_ url: String, secure: Bool = false) -> Bool {
        if url.isEmpty { return true }
        let scheme = secure ? secureScheme : scheme
        guard url.utf8.count <= longest, url.hasPrefix(scheme) else { return false }
        let rest = url.utf8.dropFirst(scheme.utf8.count)
        let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        let authority = rest[..<slash]
        let path = rest[slash...]
        return isValidAuthority(authority) && path.allSatisfy(isPathByte)
    }

    private static func isValidAuthority(_ bytes: Substring.UTF8View.SubSequence) -> Bool {
        var host = bytes
        var port: Substring.UTF8View.SubSequence?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let inner = String(decoding: bytes[bytes.index(after: bytes.startIndex)..<close], as: UTF8.self)
            guard !inner.contains("%"), HostName.isIPv6Literal(inner) else { return false }
            let after = bytes[bytes.index(after: close)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return false }
                port = after.dropFirst()
            }
        } else {
            if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
                host = bytes[..<colon]
                port = bytes[bytes.index(after: colon)...]
            }
            let name = String(decoding: host, as: UTF8.self)
            guard HostName.isIPv4Literal(name) || HostName.isDNSName(name) else { return false }
        }
        if let port {
            guard (1...5).contains(port.count), port.allSatisfy({ (0x30...0x39).contains($0) }),
                let number = Int(String(decoding: port, as: UTF8.self)), (1...65535).contains(number)
            else { return false }
        }
        return true
    }

    /// RFC 3986's path and query characters (percent signs included as they are).
    private static func isPathByte(_ c: UInt8) -> Bool {
        guard c > 0x20, c < 0x7F else { return false }
        return !"\"<>\\^`{|}#".utf8.contains(c)
    }
}
