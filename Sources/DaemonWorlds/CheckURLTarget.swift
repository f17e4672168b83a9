import NetAddress
import NetCore

/// Where a CheckURL leads: its host as written, the port, and the address when the host
/// is one already (in any form curl would read as an address, `0x7f000001` included).
public struct CheckURLTarget: Equatable, Sendable {
    public let host: String
    public let port: UInt16
    public let literal: IPAddress?

    /// Whether the URL is https.
    public let secure: Bool

    /// nil for "" or a URL `CheckURL.isValid` refuses (as CheckURL, or as SecureCheckURL when https).
    public init?(_ url: String) {
        secure = url.hasPrefix(CheckURL.secureScheme)
        guard !url.isEmpty, CheckURL.isValid(url, secure: secure) else { return nil }
        let rest = url.utf8.dropFirst((secure ? CheckURL.secureScheme : CheckURL.scheme).utf8.count)
        let authority = Substring(rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") })
        var host = authority
        var port: UInt16 = secure ? 443 : 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { port = UInt16(after.dropFirst()) ?? 0 }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            port = UInt16(authority[authority.index(after: colon)...]) ?? 0
        }
        guard port != 0 else { return nil }
        self.host = String(host)
        self.port = port
        literal = IPAddress(String(host)) ?? IPAddress(lenientIPv4: String(host))
    }

    /// The URL's host is an address that leads into this machine or its link.
    public var isInwardLiteral: Bool { literal?.pointsInward ?? false }
}
