/// What a captive-portal API said (RFC 8908), read from its JSON strictly: a portal is never
/// inferred from an answer that is not exactly what the RFC describes. Pure.
public struct CapportAnswer: Equatable, Sendable {
    public var captive: Bool
    /// Where to sign in (https); nil when not captive.
    public var userPortalURL: String?
    /// The venue's page (https), when given and usable.
    public var venueInfoURL: String?
    /// `seconds-remaining`, when given.
    public var secondsRemaining: UInt64?

    public init(
        captive: Bool, userPortalURL: String? = nil, venueInfoURL: String? = nil, secondsRemaining: UInt64? = nil
    ) {
        self.captive = captive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.secondsRemaining = secondsRemaining
    }

    /// At most this much of the API's answer is read (INTERFACE.md); more is an answer not taken.
    public static let largestBody = 4096
    /// A URL longer than this is not shown.
    public static let longestURL = 2048

    /// The answer in `body` (the API's 200), or why it is not taken.
    public static func parse(_ body: [UInt8]) -> Result<CapportAnswer, StrictJSON.Malformed> {
        guard body.count <= largestBody else { return .failure(.init(text: "more than \(largestBody) bytes")) }
        let value: JSONValue
        switch StrictJSON.parse(body) {
        case .success(let parsed): value = parsed
        case .failure(let why): return .failure(.init(text: "not JSON: \(why.text)"))
        }
        guard case .object = value else { return .failure(.init(text: "not a JSON object")) }
        guard case .bool(let captive)? = value["captive"] else {
            return .failure(.init(text: "no boolean \"captive\""))
        }
        var answer = CapportAnswer(captive: captive)
        if captive {
            guard case .string(let url)? = value["user-portal-url"] else {
                return .failure(.init(text: "captive, but no \"user-portal-url\""))
            }
            guard isSecureURL(url) else {
                return .failure(.init(text: "captive, but the user-portal-url is not an https URL"))
            }
            answer.userPortalURL = url
        }
        if case .string(let url)? = value["venue-info-url"], isSecureURL(url) { answer.venueInfoURL = url }
        if case .number(let text)? = value["seconds-remaining"], let seconds = UInt64(text), seconds <= 1 << 40 {
            answer.secondsRemaining = seconds
        }
        return .success(answer)
    }

    /// An https URL fit to show and to hand on: printable ASCII, a host, bounded.
    public static func isSecureURL(_ url: String) -> Bool {
        let scheme = "https://"
        guard url.utf8.count <= longestURL, url.hasPrefix(scheme), url.utf8.count > scheme.utf8.count,
            url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return false }
        let first = url.utf8[url.utf8.index(url.utf8.startIndex, offsetBy: scheme.utf8.count)]
        return first != UInt8(ascii: "/") && first != UInt8(ascii: "?") && first != UInt8(ascii: "#")
    }
}
