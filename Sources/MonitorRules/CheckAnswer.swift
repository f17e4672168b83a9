/// What one GET of CheckURL came back with, and what it means (INTERFACE.md,
/// "Connectivity"). Pure.
public struct CheckAnswer: Equatable, Sendable {
    /// curl's error text when the transfer failed before an answer ("" when it did not).
    public var transportError: String
    /// The HTTP status code; 0 when none came.
    public var status: Int
    /// The Location of a redirect, made absolute; "" when none.
    public var location: String
    /// Body bytes received (counting stops past the cap).
    public var bodyBytes: Int

    public init(transportError: String = "", status: Int = 0, location: String = "", bodyBytes: Int = 0) {
        self.transportError = transportError
        self.status = status
        self.location = location
        self.bodyBytes = bodyBytes
    }

    public enum Meaning: Equatable, Sendable {
        /// 204, or 200 with an empty body: the Internet answered.
        case expected
        /// Someone else answered: sign in at this URL.
        case portal(String)
        /// No usable answer: why, in a few words.
        case failed(String)
    }

    static let redirects: Set<Int> = [301, 302, 303, 307, 308]
    /// A PortalURL longer than this is not shown; CheckURL stands in for it.
    public static let longestPortalURL = 2048

    /// `checkURL` stands in for the portal's address when it gave no usable Location.
    public func meaning(checkURL: String) -> Meaning {
        guard transportError.isEmpty || status == 200 else { return .failed(transportError) }
        switch status {
        case 204:
            return .expected
        case 200:
            return bodyBytes == 0 && transportError.isEmpty ? .expected : .portal(checkURL)
        case let code where Self.redirects.contains(code) || code == 511:
            return .portal(Self.usable(location) ?? checkURL)
        case 0:
            return .failed("no HTTP answer")
        default:
            return .failed("HTTP \(status)")
        }
    }

    /// A Location fit to show and to hand on: http(s), printable ASCII, bounded.
    static func usable(_ location: String) -> String? {
        guard !location.isEmpty, location.utf8.count <= longestPortalURL,
              location.hasPrefix("http://") || location.hasPrefix("https://"),
              location.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return location
    }
}
