import EventLoop
import HTTPCheck
import MonitorRules
import NetAddress
import Probe

/// One check of the network as the settings ask it: CheckURL and SecureCheckURL fetched side by side
/// (each within the limit), each with a fresh nonce when CheckEcho is on, their meanings combined
/// (`CheckAnswer.combine`) into the one the core takes.
final class CheckPairRun {
    private var plain: CheckRun?
    private var secure: CheckRun?
    private var plainMeaning: CheckAnswer.Meaning?
    private var secureMeaning: CheckAnswer.Meaning?
    private var completion: ((CheckAnswer.Meaning) -> Void)?
    private let settings: CheckConfiguration
    private let caFile: String?

    init(
        _ settings: CheckConfiguration, caFile: String?, family: IPFamily, limitMilliseconds: Int,
        isThisMachine: @escaping (IPAddress) -> Bool,
        first: Bool, loop: MainLoop, resolver: HostResolver, http: (any HTTPClientSource)?,
        completion: @escaping (CheckAnswer.Meaning) -> Void
    ) {
        self.settings = settings
        self.caFile = caFile
        self.completion = completion
        func run(_ url: String, secure: Bool, _ done: @escaping (CheckPairRun, CheckAnswer.Meaning) -> Void) -> CheckRun
        {
            let nonce = settings.echo ? Self.nonce() : nil
            var options = HTTPRequestOptions(secure: secure, caFile: secure ? caFile : nil)
            var fetched = url
            if let nonce {
                fetched += (url.contains("?") ? "&" : "?") + "\(CheckAnswer.nonceParameter)=\(nonce)"
                options.headers = ["\(CheckAnswer.nonceHeader): \(nonce)"]
            }
            return CheckRun(
                url: fetched, family: family, options: options, limitMilliseconds: limitMilliseconds,
                mayPointInward: secure ? settings.secureMayPointInward : settings.plainMayPointInward,
                isThisMachine: isThisMachine, first: first, loop: loop,
                resolver: resolver, http: http
            ) { [weak self] answer in
                guard let self else { return }
                done(self, answer.meaning(checkURL: url, nonce: nonce))
            }
        }
        if !settings.url.isEmpty {
            plain = run(settings.url, secure: false) { run, meaning in
                run.plain = nil
                run.plainMeaning = meaning
                run.finishIfDone()
            }
        }
        if !settings.secureURL.isEmpty {
            secure = run(settings.secureURL, secure: true) { run, meaning in
                run.secure = nil
                run.secureMeaning = meaning
                run.finishIfDone()
            }
        }
    }

    deinit {
        cancel()
    }

    func cancel() {
        completion = nil
        plain?.cancel()
        secure?.cancel()
        plain = nil
        secure = nil
    }

    private func finishIfDone() {
        guard plain == nil, secure == nil, let completion else { return }
        self.completion = nil
        completion(
            CheckAnswer.combine(
                plainURL: settings.url, plain: plainMeaning, secureURL: settings.secureURL, secure: secureMeaning))
    }

    /// 128 random bits in hex, never the same twice (the system's generator: getrandom).
    static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return [generator.next(), generator.next()].map { (value: UInt64) in
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
