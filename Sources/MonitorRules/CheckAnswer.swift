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
    /// The `X-Netobserver-Echo` header's value ("" when none came).
    public var echo: String
    /// The body itself, when the request asked to keep it (up to its cap).
    public var body: [UInt8]

    public init(
        transportError: String = "", status: Int = 0, location: String = "", bodyBytes: Int = 0, echo: String = "",
        body: [UInt8] = []
    ) {
        self.transportError = transportError
        self.status = status
        self.location = location
        self.bodyBytes = bodyBytes
        self.echo = echo
        self.body = body
    }

    /// The header a server echoes the nonce in, and the query parameter and header it comes in.
    public static let echoHeader = "X-Netobserver-Echo"
    public static let nonceHeader = "X-Netobserver-Nonce"
    public static let nonceParameter = "netobserver-nonce"

    public enum Meaning: Equatable, Sendable {
        /// 204, or 200 with an empty body: the Internet answered.
        case expected
        /// Someone else answered: sign in at this URL.
        case portal(String)
        /// No usable answer: why, in a few words.
        case failed(String)
        /// The expected answer, but without the nonce's echo: someone on the path answered (CheckEcho).
        case intercepted
        /// What the plain and the secure check say together, when it is `limited`: the whole Reason,
        /// and whether the plain check passed while the secure one failed (Partial).
        case limited(reason: String, partial: Bool)
    }

    static let redirects: Set<Int> = [301, 302, 303, 307, 308]
    /// A PortalURL longer than this is not shown; CheckURL stands in for it.
    public static let longestPortalURL = 2048

    /// `checkURL` stands in for the portal's address when it gave no usable Location. `nonce`: the one the
    /// request carried (CheckEcho), which only a 204 echoing it answers as expected.
    public func meaning(checkURL: String, nonce: String? = nil) -> Meaning {
        guard transportError.isEmpty || status == 200 else { return .failed(transportError) }
        switch status {
        case 204:
            if let nonce, echo != nonce { return .intercepted }
            return .expected
        case 200:
            guard bodyBytes == 0 && transportError.isEmpty else { return .portal(checkURL) }
            return nonce == nil ? .expected : .intercepted
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
            location.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return nil }
        return location
    }

    /// The plain check's meaning and the secure one's together (INTERFACE.md "Portal truth"): nil for a
    /// check that is off. A portal on the plain one wins; the plain one expected and the secure one not
    /// is `limited` with Partial; the secure one alone decides when it is alone (a portal cannot answer
    /// inside a verified TLS connection, so anything but its expected answer is a failure).
    public static func combine(plainURL: String, plain: Meaning?, secureURL: String, secure: Meaning?) -> Meaning {
        switch (plain, secure) {
        case (nil, nil):
            return .failed("no check is set")
        case (let plain?, nil):
            return plain == .intercepted ? .limited(reason: intercepted(plainURL), partial: false) : plain
        case (nil, let secure?):
            if secure == .expected { return .expected }
            return .limited(
                reason: secure == .intercepted ? intercepted(secureURL) : "check \(secureURL) failed: \(why(secure))",
                partial: false)
        case (let plain?, let secure?):
            switch plain {
            case .expected:
                if secure == .expected { return .expected }
                if secure == .intercepted { return .limited(reason: intercepted(secureURL), partial: false) }
                return .limited(reason: "HTTPS fails on this network: \(secureURL): \(why(secure))", partial: true)
            case .intercepted:
                return .limited(reason: intercepted(plainURL), partial: false)
            default:
                return plain
            }
        }
    }

    static func intercepted(_ url: String) -> String { "check \(url): answered without the echo (intercepted)" }

    private static func why(_ meaning: Meaning) -> String {
        switch meaning {
        case .expected: "answered as expected"
        case .portal: "redirected (no portal can answer inside verified TLS)"
        case .failed(let why): why
        case .intercepted: "answered without the echo"
        case .limited(let reason, _): reason
        }
    }
}
