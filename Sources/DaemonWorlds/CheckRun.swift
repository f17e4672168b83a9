import EventLoop
import Glibc
import HTTPCheck
import MonitorRules
import NetAddress
import NetCore
import Probe
import Timekeeping

/// One GET for the checks or the captive-portal API, all within its time limit: the URL's host is
/// resolved by the service's own resolver (off the loop, as Host is), an address leading into this
/// machine is refused unless the administrator chose the URL, and libcurl is handed the address, so
/// it never starts a resolver thread of its own (whose clean-up would block the loop when a lookup
/// hangs). It ends with curl's answer, or one whose `transportError` says why there is none.
final class CheckRun {
    private let loop: MainLoop
    private let resolver: HostResolver
    private let resolverOwner: UInt64
    private let started: Instant
    private let limitMilliseconds: Int
    private var request: (any HTTPTransfer)?
    private var deadline: LoopTimer?
    private var completion: ((CheckAnswer) -> Void)?
    private let options: HTTPRequestOptions
    private let isThisMachine: (IPAddress) -> Bool

    /// Starts checking `url`; `completion` runs on the loop once, on a later turn, unless cancelled.
    /// `isThisMachine`: whether an address is one of this machine's (refused like loopback unless the
    /// administrator chose the URL). `first`: the lookup goes before other targets' (the default target's).
    /// `family`: the check runs over the URL host's first address in that family, or, when it has none
    /// there, over its first address (that family then takes the other's answer).
    init(
        url: String, family: IPFamily? = nil, options: HTTPRequestOptions = HTTPRequestOptions(),
        limitMilliseconds: Int,
        mayPointInward: Bool, isThisMachine: @escaping (IPAddress) -> Bool = { _ in false },
        first: Bool = false, loop: MainLoop, resolver: HostResolver, http: (any HTTPClientSource)?,
        completion: @escaping (CheckAnswer) -> Void
    ) {
        self.loop = loop
        self.options = options
        self.resolver = resolver
        self.limitMilliseconds = limitMilliseconds
        self.completion = completion
        self.isThisMachine = isThisMachine
        resolverOwner = resolver.newOwner()
        started = loop.now()
        let target = CheckURLTarget(url)
        deadline = loop.schedule(after: .milliseconds(limitMilliseconds)) { [weak self] in
            guard let self else { return }
            deadline = nil
            let limit = Self.duration(limitMilliseconds)
            // Still no address: the lookup is what hangs.
            let why =
                request == nil && target?.literal == nil
                ? "cannot resolve \(target?.host ?? url): no answer within \(limit)"
                : "timed out"
            finish(.failed(why))
        }
        guard let target, target.secure == options.secure else {
            finishLater(.failed("the URL is not valid"))
            return
        }
        guard let client = http?.getter else {
            finishLater(.failed(http?.failure.map { "libcurl is not available: \($0)" } ?? "the check could not start"))
            return
        }
        if let literal = target.literal {
            connect(url, target, literal, client, mayPointInward: mayPointInward)
            return
        }
        resolver.resolve(target.host, family: AF_UNSPEC, owner: resolverOwner, first: first) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let addresses):
                // The first address, as getaddrinfo orders them, in the family asked for when it has one;
                // any inward one makes the name suspect.
                guard let first = addresses.first(where: { $0.ipFamily == family }) ?? addresses.first else {
                    return finish(.failed("cannot resolve \(target.host): no address"))
                }
                if !mayPointInward, addresses.contains(where: leadsInward) {
                    return finish(.failed(Self.inward))
                }
                connect(url, target, first, client, mayPointInward: mayPointInward)
            case .failure(let failure):
                finish(.failed(failure.message))
            }
        }
    }

    static let inward = "check URL resolves to a local address"

    /// Into this machine or its link: loopback, link-local, unspecified, multicast, or one of this machine's addresses.
    private func leadsInward(_ address: IPAddress) -> Bool {
        address.pointsInward || isThisMachine(address)
    }

    private static func duration(_ milliseconds: Int) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }

    deinit {
        cancel()
    }

    /// Drops the run: its completion does not run.
    func cancel() {
        completion = nil
        resolver.cancelAll(owner: resolverOwner)
        request?.cancel()
        request = nil
        if let deadline { loop.cancel(deadline) }
        deadline = nil
    }

    private func connect(
        _ url: String, _ target: CheckURLTarget, _ address: IPAddress, _ client: any HTTPGetting,
        mayPointInward: Bool
    ) {
        guard mayPointInward || !leadsInward(address) else { return finishLater(.failed(Self.inward)) }
        let spent = Int((loop.now() &- started).milliseconds)
        let left = max(1, limitMilliseconds - spent)
        let pinned =
            target.literal == nil
            ? HTTPClient.Pin(host: target.host, port: target.port, address: address.description) : nil
        request = client.startGet(url, pinnedTo: pinned, timeoutMilliseconds: left, options: options) {
            [weak self] answer in
            guard let self else { return }
            request = nil
            finish(answer)
        }
        if request == nil { finishLater(.failed("the check could not start")) }
    }

    private func finishLater(_ failure: Failure) {
        loop.atEndOfTurn { [weak self] in self?.finish(failure) }
    }

    private func finish(_ failure: Failure) {
        finish(CheckAnswer(transportError: failure.why))
    }

    private func finish(_ answer: CheckAnswer) {
        guard let completion else { return }
        cancel()
        completion(answer)
    }

    /// Why there is no answer from the server.
    private struct Failure {
        let why: String
        static func failed(_ why: String) -> Failure { Failure(why: why) }
    }
}
