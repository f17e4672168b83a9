import MonitorRules
import Timekeeping

// libFuzzer entry for the captive-portal API's answer (RFC 8908): the strict JSON reader, the
// answer's rules, then the follower taking it, built by `make fuzz`.

func capportFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = StrictJSON.parse(bytes)
    let result = CapportAnswer.parse(bytes)
    if case .success(let answer) = result {
        precondition(size <= CapportAnswer.largestBody)
        // A portal only with an https URL to sign in at.
        if answer.captive { precondition(answer.userPortalURL.map(CapportAnswer.isSecureURL) == true) }
        if let venue = answer.venueInfoURL { precondition(CapportAnswer.isSecureURL(venue)) }
    }
    var follower = CapportFollower()
    guard case .fetch(_, let generation)? = follower.announced("https://api.test/", now: .origin).last else {
        preconditionFailure("an https announcement is fetched")
    }
    _ = follower.fetched(generation: generation, result, now: Instant(nanoseconds: 1))
    if case .failure = result { precondition(follower.facts?.answer == nil) }
    precondition(follower.nextWakeup != nil)
    return 0
}
