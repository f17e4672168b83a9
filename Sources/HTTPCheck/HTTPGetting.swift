import MonitorRules

/// One GET as the check runs it: started on the loop, answered there once, or cancelled.
/// HTTPClient does it with libcurl; the driver tests stand in for it.
public protocol HTTPGetting: AnyObject {
    /// nil when it could not start; `completion` runs on the loop unless the transfer is cancelled first.
    func startGet(
        _ url: String, pinnedTo pin: HTTPClient.Pin?, timeoutMilliseconds: Int, options: HTTPRequestOptions,
        completion: @escaping (CheckAnswer) -> Void
    ) -> (any HTTPTransfer)?
}

/// A GET under way.
public protocol HTTPTransfer: AnyObject {
    /// Its completion does not run.
    func cancel()
}

/// Where the check gets its HTTP client: LazyHTTPClient loads libcurl on first use.
public protocol HTTPClientSource: AnyObject {
    /// The client; nil when there is none (`failure` says why).
    var getter: (any HTTPGetting)? { get }
    var failure: String? { get }
}

extension HTTPRequest: HTTPTransfer {}

extension HTTPClient: HTTPGetting {
    public func startGet(
        _ url: String, pinnedTo pin: Pin?, timeoutMilliseconds: Int, options: HTTPRequestOptions,
        completion: @escaping (CheckAnswer) -> Void
    ) -> (any HTTPTransfer)? {
        get(url, pinnedTo: pin, timeoutMilliseconds: timeoutMilliseconds, options: options, completion: completion)
    }
}

extension LazyHTTPClient: HTTPClientSource {
    public var getter: (any HTTPGetting)? { client }
}
