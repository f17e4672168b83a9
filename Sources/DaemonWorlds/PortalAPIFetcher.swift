import EventLoop
import HTTPCheck
import MonitorRules
import NetAddress
import Probe
import Timekeeping

/// The captive-portal APIs' fetches, for the service's core (which follows the announcements and decides
/// when to ask): each over verified HTTPS, off the loop, ended by its limit, and answered once, through
/// `onFetched`, unless cancelled.
public final class PortalAPIFetcher {
    private let loop: MainLoop
    private let resolver: HostResolver
    private let http: (any HTTPClientSource)?
    private let caFile: String?
    private var fetches: [LinkID: CheckRun] = [:]
    /// What fetch `generation` of `link`'s API found.
    public var onFetched: ((_ link: LinkID, _ generation: UInt64, Result<CapportAnswer, StrictJSON.Malformed>) -> Void)?
    /// Whether an address is one of this machine's: the API is never fetched there (an announcement naming this
    /// machine would make the service ask itself, or whatever listens here).
    public var isThisMachine: (IPAddress) -> Bool = { _ in false }

    public init(loop: MainLoop, resolver: HostResolver, http: (any HTTPClientSource)?, caFile: String?) {
        self.loop = loop
        self.resolver = resolver
        self.http = http
        self.caFile = caFile
    }

    deinit {
        for fetch in fetches.values { fetch.cancel() }
    }

    /// The fetch under way for `link` (if any) ends unanswered.
    public func cancel(_ link: LinkID) {
        fetches.removeValue(forKey: link)?.cancel()
    }

    /// GET `uri` for `link`, ended by `limit` (the service's core says it: max(5 s, its targets' Timeout)).
    public func fetch(_ link: LinkID, _ uri: String, _ generation: UInt64, limit: Duration) {
        fetches.removeValue(forKey: link)?.cancel()
        guard CheckURL.isValid(uri, secure: true) else {
            return loop.atEndOfTurn { [weak self] in
                self?.onFetched?(link, generation, .failure(.init(text: "not a valid https URL")))
            }
        }
        let options = HTTPRequestOptions(
            secure: true, caFile: caFile, headers: ["Accept: application/captive+json"],
            keepBody: true, bodyLimit: CapportAnswer.largestBody)
        // The API's host may be on the local network, never loopback, link-local, unspecified or multicast.
        // Its lookup goes first, as the default target's do: no added target's hanging name holds it up.
        fetches[link] = CheckRun(
            url: uri, options: options, limitMilliseconds: Int(clamping: limit.milliseconds), mayPointInward: false,
            isThisMachine: isThisMachine, first: true, loop: loop, resolver: resolver,
            http: http
        ) { [weak self] answer in
            guard let self else { return }
            fetches[link] = nil
            onFetched?(link, generation, Self.read(answer))
        }
    }

    /// The API's answer: a 200 of at most 4,096 bytes of JSON as RFC 8908 has it.
    static func read(_ answer: CheckAnswer) -> Result<CapportAnswer, StrictJSON.Malformed> {
        if answer.bodyBytes > CapportAnswer.largestBody {
            return .failure(.init(text: "more than \(CapportAnswer.largestBody) bytes"))
        }
        guard answer.transportError.isEmpty else { return .failure(.init(text: answer.transportError)) }
        guard answer.status == 200 else {
            return .failure(.init(text: answer.status == 0 ? "no HTTP answer" : "HTTP \(answer.status)"))
        }
        return CapportAnswer.parse(answer.body)
    }
}
