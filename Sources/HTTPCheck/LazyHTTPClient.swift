import EventLoop

/// One HTTPClient for every target, made (and libcurl loaded) on the first check, so
/// a daemon whose CheckURLs are all off never loads libcurl.
public final class LazyHTTPClient {
    private let loop: MainLoop
    private var made: HTTPClient?
    /// Why libcurl could not be used; nil until tried, or when it worked.
    public private(set) var failure: String?

    public init(loop: MainLoop) {
        self.loop = loop
    }

    /// The client; nil when libcurl cannot be loaded (see `failure`).
    public var client: HTTPClient? {
        if let made { return made }
        guard failure == nil else { return nil }
        do {
            made = try HTTPClient(loop: loop)
        } catch {
            switch error {
            case .unavailable(let why): failure = why
            }
        }
        return made
    }
}
