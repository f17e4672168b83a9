import MonitorRules
import TestTime
import Timekeeping
import XCTest

/// RFC 8908's JSON read strictly, and the follower's cadence: what the network's API says becomes a
/// fact only when it is exactly the RFC's, and it is asked at once, every 2 s while captive, and
/// otherwise at the earlier of 300 s and seconds-remaining - 60 s.
final class CapportTests: XCTestCase {

    func json(_ text: String) -> Result<JSONValue, StrictJSON.Malformed> { StrictJSON.parse(Array(text.utf8)) }

    func testStrictJSONTakesWhatRFC8259Allows() throws {
        XCTAssertEqual(
            try json(#" { "a" : [1, -2.5e3, true, false, null, "x\u00e9\ud83d\ude00\n"] } "#).get(),
            .object([
                (
                    "a",
                    .array([
                        .number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null,
                        .string("xé😀\n"),
                    ])
                )
            ]))
        XCTAssertEqual(try json("\"é\"").get(), .string("é"))
        XCTAssertEqual(try json("0").get(), .number("0"))
    }

    func testStrictJSONRefusesEverythingElse() {
        let bad = [
            "", "{", "{\"a\":1,}", "[1,]", "01", "1.", "-", "1e", "{'a':1}", "{\"a\" 1}", "{\"a\":1 \"b\":2}",
            "{\"a\":1,\"a\":2}", "\"\u{01}\"", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
            "tru", "nul", "{} {}", "/* */ {}", "NaN",
            "[" + String(repeating: "[", count: 20) + String(repeating: "]", count: 21),
        ]
        for text in bad {
            guard case .failure = json(text) else { return XCTFail("took \(text)") }
        }
        for bytes: [UInt8] in [
            [0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],
            [0x22, 0xE2, 0x82, 0x22], [0x22, 0xFF, 0x22], [0xEF, 0xBB, 0xBF, 0x7B, 0x7D],
        ] {
            guard case .failure = StrictJSON.parse(bytes) else { return XCTFail("took \(bytes)") }
        }
    }

    func answer(_ text: String) -> Result<CapportAnswer, StrictJSON.Malformed> { CapportAnswer.parse(Array(text.utf8)) }

    func testTheAPIsAnswers() throws {
        XCTAssertEqual(
            try answer(
                #"{"captive": true, "user-portal-url": "https://portal.example/login", "venue-info-url": "https://venue.example/", "seconds-remaining": 0, "can-extend-session": true}"#
            ).get(),
            CapportAnswer(
                captive: true, userPortalURL: "https://portal.example/login", venueInfoURL: "https://venue.example/",
                secondsRemaining: 0))
        XCTAssertEqual(
            try answer(#"{"captive": false, "seconds-remaining": 3600, "bytes-remaining": 10}"#).get(),
            CapportAnswer(captive: false, secondsRemaining: 3600))
        // A venue that is not https, or a count that is not a whole number, is left out; the answer stands.
        XCTAssertEqual(
            try answer(#"{"captive": false, "venue-info-url": "http://venue.example/", "seconds-remaining": 1.5}"#)
                .get(),
            CapportAnswer(captive: false))
    }

    func testAnAnswerNotExactlyTheRFCsMakesNoPortal() {
        let bad = [
            #"{"captive": true}"#, #"{"captive": true, "user-portal-url": "http://portal.example/"}"#,
            #"{"captive": true, "user-portal-url": 5}"#,
            #"{"captive": "true", "user-portal-url": "https://p.example/"}"#,
            #"{"user-portal-url": "https://p.example/"}"#, #"[{"captive": true}]"#, "captive",
            #"{"captive": true, "user-portal-url": "https://p.example/ x"}"#,
            #"{"captive": true, "user-portal-url": "https://"}"#,
            #"{"captive": true, "captive": false}"#,
        ]
        for text in bad {
            guard case .failure = answer(text) else { return XCTFail("took \(text)") }
        }
        let long = "{\"captive\": false, \"x\": \"" + String(repeating: "a", count: 4100) + "\"}"
        guard case .failure(let why) = answer(long) else { return XCTFail("took 4 KiB and more") }
        XCTAssertEqual(why.text, "more than 4096 bytes")
    }

    /// Issue 45 N21: 40 announcements a second, each with another URI, fetched each one at once (85 % of a core).
    /// Changes are coalesced: at most one announcement fetch per 10 s per link, the latest URI; another link's
    /// follower is its own.
    func testAnnouncementsAreFetchedAtMostOncePer10SecondsPerLink() {
        var eth0 = CapportFollower()
        var wlan0 = CapportFollower()
        var fetched: [(at: Instant, uri: String)] = []
        var now = Instant.origin
        func take(_ actions: [CapportFollower.Action], _ follower: inout CapportFollower) {
            for case .fetch(let uri, let generation) in actions {
                fetched.append((now, uri))
                _ = follower.fetched(generation: generation, .failure(StrictJSON.Malformed(text: "no")), now: now)
            }
        }
        for tick in 0..<(40 * 30) {
            now = .origin + .milliseconds(UInt64(tick) * 25)
            take(eth0.announced("https://api-\(tick).example/capport", now: now), &eth0)
            take(wlan0.announced("https://api.example/capport", now: now), &wlan0)
            if let wake = eth0.nextWakeup, wake <= now { take(eth0.handleTimeout(now: now), &eth0) }
            if let wake = wlan0.nextWakeup, wake <= now { take(wlan0.handleTimeout(now: now), &wlan0) }
        }
        let changing = fetched.filter { $0.uri.hasPrefix("https://api-") }
        XCTAssertLessThanOrEqual(changing.count, 3, "\(changing.count) fetches in 30 s of 40 announcements a second")
        XCTAssertGreaterThanOrEqual(changing.count, 2, "a changed announcement is still fetched")
        for (earlier, later) in zip(changing, changing.dropFirst()) {
            XCTAssertGreaterThanOrEqual(later.at - earlier.at, .seconds(10))
        }
        XCTAssertEqual(
            fetched.filter { $0.uri == "https://api.example/capport" }.count, 1, "another link is not held up")
    }

    /// Issue 54 N20: a router changing its announcement with every advertisement made a log line each (7,976 for
    /// 8,000). At most one line per link per 10 s, the next saying how many were not logged.
    func testAnnouncementsAreLoggedAtMostOncePer10SecondsPerLink() {
        var follower = CapportFollower()
        var lines: [String] = []
        for tick in 0..<8_000 {
            let now = Instant.origin + .milliseconds(UInt64(tick) * 5)
            let uri = tick % 3 == 0 ? "http://plain-\(tick).example/" : "https://api-\(tick).example/capport"
            for case .log(let line) in follower.announced(uri, now: now) { lines.append(line) }
        }
        XCTAssertLessThanOrEqual(lines.count, 1 + 40 / 10, "\(lines.count) lines in 40 s")
        XCTAssertTrue(lines.dropFirst().allSatisfy { $0.contains("earlier announcements not logged") }, "\(lines)")
    }

    func testTheFollowerAsksAtOnceThenEveryTwoSecondsWhileCaptive() {
        var follower = CapportFollower()
        var actions = follower.announced("https://api.example/capport", now: 0)
        guard case .fetch("https://api.example/capport", let first)? = actions.last else {
            return XCTFail("\(actions)")
        }
        XCTAssertNil(follower.nextWakeup, "nothing else while the fetch runs")
        XCTAssertTrue(follower.isUnderway(generation: first))
        XCTAssertFalse(follower.isUnderway(generation: first + 1))
        let captive = CapportAnswer(captive: true, userPortalURL: "https://portal.example/")
        XCTAssertTrue(follower.fetched(generation: first, .success(captive), now: 1 * second).changed)
        XCTAssertEqual(follower.facts, PortalAPIFacts(uri: "https://api.example/capport", answer: captive))
        XCTAssertEqual(follower.nextWakeup, 3 * second)
        XCTAssertEqual(follower.handleTimeout(now: 2 * second), [])
        actions = follower.handleTimeout(now: 3 * second)
        guard case .fetch(_, let second2)? = actions.first else { return XCTFail("\(actions)") }
        // A stale answer is not taken.
        XCTAssertFalse(
            follower.fetched(generation: first, .success(CapportAnswer(captive: false)), now: 4 * second).changed)
        // Not captive, 600 s left: asked again at 540 s, not 300.
        let open = CapportAnswer(captive: false, secondsRemaining: 600)
        XCTAssertTrue(follower.fetched(generation: second2, .success(open), now: 4 * second).changed)
        XCTAssertEqual(follower.nextWakeup, 4 * second + 300 * second)
        actions = follower.handleTimeout(now: 304 * second)
        guard case .fetch(_, let third)? = actions.first else { return XCTFail("\(actions)") }
        _ = follower.fetched(
            generation: third, .success(CapportAnswer(captive: false, secondsRemaining: 120)), now: 305 * second)
        XCTAssertEqual(follower.nextWakeup, 365 * second)
        // However many seconds the API says (the fuzzer's 444,444,444,444), the next ask is at most 300 s away.
        guard case .fetch(_, let fourth)? = follower.handleTimeout(now: 365 * second).first else { return XCTFail() }
        let huge = try? CapportAnswer.parse(Array(#"{"captive": false, "seconds-remaining":444444444444}"#.utf8)).get()
        XCTAssertEqual(huge?.secondsRemaining, 444_444_444_444)
        _ = follower.fetched(generation: fourth, .success(huge ?? open), now: 366 * second)
        XCTAssertEqual(follower.nextWakeup, 666 * second)
    }

    func testAnAnswerNotTakenForgetsThePortalAndAnEndedAnnouncementCancels() {
        var follower = CapportFollower()
        guard case .fetch(_, let first)? = follower.announced("https://api.example/", now: 0).last else {
            return XCTFail()
        }
        _ = follower.fetched(
            generation: first, .success(CapportAnswer(captive: true, userPortalURL: "https://p.example/")), now: 0)
        guard case .fetch(_, let next)? = follower.handleTimeout(now: 2 * second).first else { return XCTFail() }
        let (changed, actions) = follower.fetched(generation: next, .failure(.init(text: "timed out")), now: 7 * second)
        XCTAssertTrue(changed)
        XCTAssertNil(follower.facts?.answer, "no portal from an answer that did not come")
        XCTAssertEqual(actions, [.log("captive-portal API https://api.example/ ignored: timed out")])
        guard case .fetch? = follower.handleTimeout(now: 9 * second).first else { return XCTFail("asked again soon") }
        XCTAssertEqual(follower.announced(nil, now: 10 * second), [.cancel])
        XCTAssertNil(follower.facts)
    }

    func testPlainHTTPAndTheUnrestrictedURNAreNeverFetched() {
        var plain = CapportFollower()
        var unrestricted = CapportFollower()
        let actions =
            plain.announced("http://api.example/", now: 0)
            + unrestricted.announced(CapportFollower.unrestricted, now: 0)
        XCTAssertFalse(actions.contains { if case .fetch = $0 { true } else { false } }, "\(actions)")
        XCTAssertNil(plain.nextWakeup)
        XCTAssertNil(unrestricted.nextWakeup)
        XCTAssertEqual(plain.facts?.uri, "http://api.example/")
        // A new URI on the same link is asked at once.
        guard case .fetch("https://api.example/", _)? = plain.announced("https://api.example/", now: 5).last else {
            return XCTFail()
        }
    }
}
