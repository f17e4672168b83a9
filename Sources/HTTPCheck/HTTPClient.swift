import CCurl
import EventLoop
import MonitorRules
import ProbeRules
import Timekeeping

/// What one GET asks beyond the URL: the scheme it may use, the authorities it trusts, a few headers.
public struct HTTPRequestOptions: Equatable, Sendable {
    /// https only, the certificate and name verified (else http only).
    public var secure = false
    /// A PEM bundle trusted instead of the system's (secure requests only); nil: the system's.
    public var caFile: String?
    /// Request headers beyond Host, User-Agent and Connection (`Name: value`, printable ASCII).
    public var headers: [String] = []
    /// Keep the body (up to `bodyLimit` bytes) rather than only count it.
    public var keepBody = false
    public var bodyLimit = 64 * 1024

    public init(
        secure: Bool = false, caFile: String? = nil, headers: [String] = [], keepBody: Bool = false,
        bodyLimit: Int = 64 * 1024
    ) {
        self.secure = secure
        self.caFile = caFile
        self.headers = headers
        self.keepBody = keepBody
        self.bodyLimit = bodyLimit
    }
}

/// HTTP(S) GETs with libcurl's multi-socket interface, driven by the MainLoop
/// (as libdbus's watches and timeouts are): curl says which sockets to watch and
/// when to wake it; no thread of ours, no blocking call, no polling timer. The caller
/// resolves the URL's host and pins the address, so curl starts no resolver thread
/// (whose clean-up joins it: a hanging lookup would block the loop).
public final class HTTPClient {
    private let loop: MainLoop
    private let multi: UnsafeMutableRawPointer
    private var sources: [Int32: IOSource] = [:]
    private var timer: LoopTimer?
    private var transfers: [UnsafeMutableRawPointer: HTTPRequest] = [:]

    public static let userAgent = "netobserver"

    public enum Failure: Error, Sendable { case unavailable(String) }

    public init(loop: MainLoop) throws(Failure) {
        self.loop = loop
        guard CCurl_load() != 0 else { throw .unavailable(String(cString: CCurl_load_error())) }
        guard let multi = CCurl_multi_init() else { throw .unavailable("curl_multi_init failed") }
        self.multi = multi
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard CCurl_multi_set_callbacks(multi, socketCallback, timerCallback, context) == CURLM_OK else {
            CCurl_multi_cleanup(multi)
            throw .unavailable("libcurl refused the socket callbacks")
        }
    }

    deinit {
        for (easy, request) in transfers {
            request.detach()
            CCurl_multi_remove_handle(multi, easy)
            CCurl_easy_cleanup(easy)
        }
        if let timer { loop.cancel(timer) }
        sources.values.forEach { loop.remove($0) }
        CCurl_multi_cleanup(multi)
    }

    /// Whether curl resolves names off the loop's thread (its threaded resolver or c-ares).
    public var resolvesAsynchronously: Bool { CCurl_resolves_asynchronously() != 0 }

    public var activeTransfers: Int { transfers.count }

    /// The address a URL's host name stands for, already resolved.
    public struct Pin: Sendable {
        public let host: String
        public let port: UInt16
        public let address: String

        public init(host: String, port: UInt16, address: String) {
            self.host = host
            self.port = port
            self.address = address
        }

        /// CURLOPT_RESOLVE's `HOST:PORT:ADDRESS`, an IPv6 address in brackets.
        var entry: String { "\(host):\(port):" + (address.contains(":") ? "[\(address)]" : address) }
    }

    /// One GET of `url` (no redirect followed, no cookie kept, at most `options.bodyLimit` body bytes
    /// read, `timeoutMilliseconds` in all); `completion` runs on the loop once, unless cancelled.
    /// `pinnedTo`: the URL's host name is this address (curl then looks nothing up).
    public func get(
        _ url: String, pinnedTo pin: Pin? = nil, timeoutMilliseconds: Int,
        options: HTTPRequestOptions = HTTPRequestOptions(),
        completion: @escaping (CheckAnswer) -> Void
    ) -> HTTPRequest? {
        guard let easy = CCurl_easy_init() else { return nil }
        let resolve = pin.map { CCurl_slist_append(nil, $0.entry) } ?? nil
        // Nothing beyond the request line, Host, User-Agent, these and the caller's: no Accept unless asked, no cookies.
        var headers = CCurl_slist_append(nil, "Connection: close")
        if !options.headers.contains(where: { $0.lowercased().hasPrefix("accept:") }) {
            headers = CCurl_slist_append(headers, "Accept:")
        }
        for header in options.headers { headers = CCurl_slist_append(headers, header) }
        let request = HTTPRequest(
            client: self, easy: easy, bodyLimit: options.bodyLimit, keepBody: options.keepBody, resolve: resolve,
            headers: headers, completion: completion)
        let context = Unmanaged.passUnretained(request).toOpaque()
        let secure: [CURLcode] =
            options.secure
            ? [
                CCurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1),
                CCurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2),
                options.caFile.map { CCurl_easy_setopt_string(easy, CURLOPT_CAINFO, $0) } ?? CURLE_OK,
                // The bundle alone (Debian's libcurl also has a default CA directory, which is the same certificates):
                // libcurl keeps the store it built from a bundle for the next transfers, never one read from a
                // directory, so with both every HTTPS transfer parsed the whole bundle again.
                // It also keeps --ca-file's bundle the only trust, as documented, not one beside the system's directory.
                CCurl_easy_setopt_string(easy, CURLOPT_CAPATH, nil),
            ] : []
        let settings: [CURLcode] =
            secure + [
                CCurl_easy_setopt_string(easy, CURLOPT_URL, url),
                CCurl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, options.secure ? "https" : "http"),
                CCurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0),
                CCurl_easy_setopt_string(easy, CURLOPT_USERAGENT, Self.userAgent),
                CCurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headers),
                CCurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, CCurl_HTTP_VERSION_1_1),
                CCurl_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1),
                CCurl_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1),
                CCurl_easy_setopt_long(easy, CURLOPT_DNS_CACHE_TIMEOUT, 0),
                // No proxy from the environment: the check is about this network's own path.
                CCurl_easy_setopt_string(easy, CURLOPT_PROXY, ""),
                CCurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMilliseconds),
                CCurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1),
                CCurl_easy_set_write(easy, writeCallback, context),
                CCurl_easy_set_header(easy, headerCallback, context),
                resolve.map { CCurl_easy_setopt_slist(easy, CURLOPT_RESOLVE, $0) } ?? CURLE_OK,
            ]
        guard settings.allSatisfy({ $0 == CURLE_OK }), CCurl_multi_add_handle(multi, easy) == CURLM_OK else {
            CCurl_easy_cleanup(easy)
            request.detach()
            return nil
        }
        transfers[easy] = request
        return request
    }

    /// Drops a transfer: its completion will not run.
    func cancel(_ easy: UnsafeMutableRawPointer) {
        guard transfers.removeValue(forKey: easy) != nil else { return }
        CCurl_multi_remove_handle(multi, easy)
        CCurl_easy_cleanup(easy)
    }

    // MARK: curl's callbacks

    fileprivate func watch(_ fd: Int32, what: Int32) {
        if what == CCurl_POLL_REMOVE {
            if let source = sources.removeValue(forKey: fd) { loop.remove(source) }
            return
        }
        var interest: IOEvents = []
        if what == CCurl_POLL_IN || what == CCurl_POLL_INOUT { interest.insert(.readable) }
        if what == CCurl_POLL_OUT || what == CCurl_POLL_INOUT { interest.insert(.writable) }
        if let source = sources[fd] {
            try? loop.setInterest(source, interest)
            return
        }
        sources[fd] = try? loop.watch(fd: fd, interest: interest) { [unowned self] events in
            var flags: Int32 = 0
            if events.contains(.readable) { flags |= CCurl_CSELECT_IN }
            if events.contains(.writable) { flags |= CCurl_CSELECT_OUT }
            if !events.isDisjoint(with: [.error, .hangup]) { flags |= CCurl_CSELECT_ERR }
            act(on: fd, flags)
        }
    }

    fileprivate func arm(afterMilliseconds milliseconds: Int) {
        if let timer { loop.cancel(timer) }
        timer = nil
        guard milliseconds >= 0 else { return }
        // Never from inside curl's own call: the loop runs it on a later turn.
        timer = loop.schedule(after: .milliseconds(milliseconds)) { [unowned self] in
            timer = nil
            act(on: CCurl_SOCKET_TIMEOUT, 0)
        }
    }

    private func act(on fd: Int32, _ flags: Int32) {
        var running: Int32 = 0
        _ = CCurl_multi_socket_action(multi, fd, flags, &running)
        finishTransfers()
    }

    private func finishTransfers() {
        var left: Int32 = 0
        while let message = CCurl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                let request = transfers.removeValue(forKey: easy)
            else { continue }
            let answer = Self.answer(easy, CCurl_message_result(message), request)
            CCurl_multi_remove_handle(multi, easy)
            CCurl_easy_cleanup(easy)
            request.finish(answer)
        }
    }

    private static func answer(_ easy: UnsafeMutableRawPointer, _ code: CURLcode, _ request: HTTPRequest) -> CheckAnswer
    {
        var status = 0
        CCurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var location: UnsafePointer<CChar>? = nil
        CCurl_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &location)
        // Stopping at the body cap is ours, not a failure.
        let error = code == CURLE_OK || (code == CURLE_WRITE_ERROR && request.truncated) ? "" : describe(code)
        return CheckAnswer(
            transportError: error, status: status, location: location.map { String(cString: $0) } ?? "",
            bodyBytes: request.bodyBytes, echo: request.echo, body: request.body)
    }

    static func describe(_ code: CURLcode) -> String {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: "timed out"
        case CURLE_COULDNT_CONNECT: "connection refused or unreachable"
        case CURLE_COULDNT_RESOLVE_HOST: "cannot resolve the check's host"
        case CURLE_GOT_NOTHING: "the server closed the connection without an answer"
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR: "the connection failed"
        case CURLE_PEER_FAILED_VERIFICATION: "the server's certificate is not trusted"
        case CURLE_SSL_CONNECT_ERROR: "the TLS handshake failed"
        case CURLE_UNSUPPORTED_PROTOCOL: "the URL's scheme is not allowed here"
        default: CCurl_easy_strerror(code).map { String(cString: $0) } ?? "curl error \(code.rawValue)"
        }
    }
}

/// One GET under way; `cancel()` drops it.
public final class HTTPRequest {
    private weak var client: HTTPClient?
    private var easy: UnsafeMutableRawPointer?
    private var completion: ((CheckAnswer) -> Void)?
    let bodyLimit: Int
    let keepBody: Bool
    fileprivate(set) var bodyBytes = 0
    fileprivate(set) var truncated = false
    fileprivate(set) var body: [UInt8] = []
    /// The final response's X-Netobserver-Echo value ("" when it had none).
    fileprivate(set) var echo = ""
    /// CURLOPT_RESOLVE's and CURLOPT_HTTPHEADER's lists: curl reads them until the handle is cleaned up,
    /// so they live as long as this.
    private let resolve: UnsafeMutablePointer<curl_slist>?
    private let headers: UnsafeMutablePointer<curl_slist>?

    init(
        client: HTTPClient, easy: UnsafeMutableRawPointer, bodyLimit: Int, keepBody: Bool,
        resolve: UnsafeMutablePointer<curl_slist>?,
        headers: UnsafeMutablePointer<curl_slist>?, completion: @escaping (CheckAnswer) -> Void
    ) {
        self.client = client
        self.easy = easy
        self.bodyLimit = bodyLimit
        self.keepBody = keepBody
        self.resolve = resolve
        self.headers = headers
        self.completion = completion
    }

    deinit {
        // Every path that ends a transfer cleans its handle up first (or leaves it to the client's deinit,
        // which detaches this request and cleans up before the lists can go).
        if easy == nil {
            CCurl_slist_free_all(resolve)
            CCurl_slist_free_all(headers)
        }
    }

    public func cancel() {
        completion = nil
        if let easy { client?.cancel(easy) }
        easy = nil
    }

    func detach() {
        completion = nil
        easy = nil
    }

    func finish(_ answer: CheckAnswer) {
        easy = nil
        let completion = self.completion
        self.completion = nil
        completion?(answer)
    }

    /// Counts (and keeps, when asked) body bytes; past the limit, stops the transfer (curl then reports a write error).
    fileprivate func received(_ data: UnsafeRawBufferPointer) -> Bool {
        bodyBytes += data.count
        guard bodyBytes <= bodyLimit else {
            truncated = true
            return false
        }
        if keepBody { body.append(contentsOf: data) }
        return true
    }

    private static let statusLine = Array("HTTP/".utf8)
    private static let echoField = Array(CheckAnswer.echoHeader.lowercased().utf8) + [UInt8(ascii: ":")]

    /// One header line of a response. A status line starts a response over (after a 100 Continue, the
    /// last one's headers count); the echo is taken only when short and printable.
    fileprivate func header(_ line: UnsafeRawBufferPointer) {
        let name = Self.echoField
        if line.starts(with: Self.statusLine) {
            echo = ""
            return
        }
        guard line.count > name.count, line.count <= name.count + 80,
            zip(line.prefix(name.count), name).allSatisfy({ ($0 | 0x20) == $1 || $0 == $1 })
        else { return }
        var value = line.dropFirst(name.count)
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 {
            value = value.dropLast()
        }
        guard value.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return }
        echo = String(decoding: value, as: UTF8.self)
    }
}

private func socketCallback(
    _ easy: UnsafeMutableRawPointer?, _ fd: curl_socket_t, _ what: Int32, _ context: UnsafeMutableRawPointer?,
    _ socketContext: UnsafeMutableRawPointer?
) -> Int32 {
    guard let context else { return 0 }
    Unmanaged<HTTPClient>.fromOpaque(context).takeUnretainedValue().watch(fd, what: what)
    return 0
}

private func timerCallback(
    _ multi: UnsafeMutableRawPointer?, _ milliseconds: Int, _ context: UnsafeMutableRawPointer?
) -> Int32 {
    guard let context else { return 0 }
    Unmanaged<HTTPClient>.fromOpaque(context).takeUnretainedValue().arm(afterMilliseconds: milliseconds)
    return 0
}

private func writeCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let request = Unmanaged<HTTPRequest>.fromOpaque(context).takeUnretainedValue()
    let bytes = size * count
    return request.received(UnsafeRawBufferPointer(start: data, count: bytes)) ? bytes : 0
}

private func headerCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let bytes = size * count
    Unmanaged<HTTPRequest>.fromOpaque(context).takeUnretainedValue().header(
        UnsafeRawBufferPointer(start: data, count: bytes))
    return bytes
}
