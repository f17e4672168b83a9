import EventLoop
import Glibc
import NetAddress
import NetCore
import Probe
import ProbeRules
import Synchronization
import TestTime
import Timekeeping
import XCTest

/// No test here sends a DNS query: literals and /etc/hosts names, or an injected lookup.
final class HostResolverTests: XCTestCase {
    func resolve(
        _ resolver: HostResolver, _ loop: MainLoop, _ host: String, family: Int32 = AF_UNSPEC
    ) -> Result<[IPAddress], HostResolver.Failure>? {
        var answer: Result<[IPAddress], HostResolver.Failure>?
        let thread = pthread_self()
        resolver.resolve(host, family: family) { result in
            XCTAssertNotEqual(pthread_equal(pthread_self(), thread), 0, "answers arrive on the loop's thread")
            answer = result
            loop.quit(status: 0)
        }
        let limit = loop.schedule(after: 5_000_000_000) { loop.quit(status: 1) }
        XCTAssertEqual(loop.run(), 0)
        loop.cancel(limit)
        return answer
    }

    func testLiteralsAndLocalNames() throws {
        let loop = try MainLoop()
        let resolver = try HostResolver(loop: loop)
        XCTAssertEqual(try resolve(resolver, loop, "198.18.0.1")?.get(), [IPAddress("198.18.0.1")!])
        XCTAssertEqual(try resolve(resolver, loop, "fd00::1")?.get(), [IPAddress("fd00::1")!])
        XCTAssertEqual(try resolve(resolver, loop, "localhost", family: AF_INET)?.get().first, IPAddress("127.0.0.1"))
        guard case .failure(let failure)? = resolve(resolver, loop, "198.18.0.1", family: AF_INET6) else {
            return XCTFail("an IPv4 literal has no IPv6 address")
        }
        XCTAssertTrue(failure.message.hasPrefix("cannot resolve 198.18.0.1: "), failure.message)
    }

    func testAFailingSlowLookupNeverBlocksTheLoop() throws {
        let loop = try MainLoop()
        let resolver = try HostResolver(loop: loop) { host, _ in
            usleep(300_000)
            return .failure(HostResolver.Failure(message: "cannot resolve \(host): Name or service not known"))
        }
        var ticks = 0
        let ticker = loop.schedule(after: 10_000_000, repeats: true) { ticks += 1 }
        let answer = resolve(resolver, loop, "nowhere.invalid")
        loop.cancel(ticker)
        XCTAssertEqual(
            answer, .failure(HostResolver.Failure(message: "cannot resolve nowhere.invalid: Name or service not known"))
        )
        XCTAssertGreaterThan(ticks, 15, "the loop kept turning while the lookup took 300 ms")
    }

    func testCancelledAnswersAreDropped() throws {
        let loop = try MainLoop()
        let calls = Atomic<Int>(0)
        let resolver = try HostResolver(loop: loop) { _, _ in
            calls.add(1, ordering: .relaxed)
            return .success([IPAddress("198.18.0.9")!])
        }
        var delivered = 0
        resolver.resolve("a", family: AF_UNSPEC) { _ in delivered += 1 }
        resolver.cancelAll()
        resolver.resolve("b", family: AF_UNSPEC) { _ in
            delivered += 10
            loop.quit(status: 0)
        }
        _ = loop.run()
        XCTAssertEqual(delivered, 10)
        // "a" runs only if the worker took it before cancelAll; a cancelled lookup not yet started is skipped.
        XCTAssertLessThanOrEqual(calls.load(ordering: .relaxed), 2)
        XCTAssertGreaterThanOrEqual(calls.load(ordering: .relaxed), 1)
    }

    func testANewHostNeverWaitsForStaleLookups() throws {
        // Lookups that hang (a dead resolver): eight Hosts set one after the other, then an address.
        let loop = try MainLoop()
        let started = Atomic<Int>(0)
        let resolver = try HostResolver(loop: loop) { host, _ in
            started.add(1, ordering: .relaxed)
            usleep(1_000_000)
            return .failure(HostResolver.Failure(message: "cannot resolve \(host): timed out"))
        }
        for index in 0..<8 {
            resolver.resolve("hangs-\(index).test", family: AF_UNSPEC) { _ in XCTFail("a cancelled lookup answered") }
            resolver.cancelAll()
        }
        let begin = MonotonicClock.now()
        XCTAssertEqual(try resolve(resolver, loop, "198.18.0.7")?.get(), [IPAddress("198.18.0.7")!])
        XCTAssertLessThan(MonotonicClock.now() - begin, 500_000_000, "the address did not wait for the hung lookups")
        // A name waits for the lookup under way at most, never for the skipped ones.
        let name = resolve(resolver, loop, "next.test")
        XCTAssertEqual(name, .failure(HostResolver.Failure(message: "cannot resolve next.test: timed out")))
        // Without the skip all nine would run, one after the other (9 s).
        XCTAssertLessThanOrEqual(
            started.load(ordering: .relaxed), 2, "at most a stale lookup already under way, and the new one")
    }

    /// "Lookups never wait behind other targets": the default target's lookups go first, and
    /// each owner has at most one lookup waiting however often it asks.
    func testTheDefaultTargetGoesFirstAndNoOwnerPilesUp() throws {
        let loop = try MainLoop()
        let asked = Mutex<[String]>([])
        let resolver = try HostResolver(loop: loop) { host, _ in
            asked.withLock { $0.append(host) }
            if host.hasPrefix("hang") { usleep(200_000) }
            return .success([IPAddress("198.18.0.9")!])
        }
        var answered: [String] = []
        let owners = (0..<12).map { _ in resolver.newOwner() }
        // Eleven targets whose names hang, each asking three times (a Host Set twice more meanwhile).
        for round in 0..<3 {
            for (index, owner) in owners.dropFirst().enumerated() {
                resolver.resolve("hang\(index)-\(round)", family: AF_UNSPEC, owner: owner) { _ in
                    answered.append("hang\(index)-\(round)")
                }
            }
        }
        let started = loop.now()
        var defaultAnsweredAfter: Duration?
        resolver.resolve("default.test", family: AF_UNSPEC, owner: owners[0], first: true) { _ in
            answered.append("default.test")
            defaultAnsweredAfter = loop.now() - started
        }
        let limit = loop.schedule(after: 5_000_000_000) { loop.quit(status: 1) }
        let done = loop.schedule(after: 100_000_000, repeats: true) {
            if (0..<11).allSatisfy({ answered.contains("hang\($0)-2") }) && answered.contains("default.test") {
                loop.quit(status: 0)
            }
        }
        XCTAssertEqual(loop.run(), 0, "answered: \(answered)")
        loop.cancel(limit)
        loop.cancel(done)
        let order = asked.withLock { $0 }
        XCTAssertTrue(
            (12...13).contains(order.count),
            "one lookup per owner, the latest it asked (and one already started): \(order)")
        XCTAssertLessThanOrEqual(
            order.firstIndex(of: "default.test") ?? 99, 1, "the default target's lookup waits for one at most: \(order)"
        )
        XCTAssertLessThan(defaultAnsweredAfter ?? .forever, 1 * second, "not behind eleven hanging lookups (2.2 s)")
        for index in 0..<11 {
            XCTAssertTrue(answered.contains("hang\(index)-2"), "each owner's newest ask is answered: \(answered)")
        }
        XCTAssertLessThanOrEqual(answered.count, 13, "older asks that never started are never answered: \(answered)")
    }

    /// Issue 45 N15: with the helper answering, a lookup under way for an added target whose name hangs held up the
    /// default target's check lookup behind it (4 of 10 default checks failed "cannot resolve"). The lookups asked
    /// `first` have a lane of their own: answered while the other lane's lookup hangs.
    func testTheDefaultTargetsLookupsNeverWaitBehindOneUnderWay() throws {
        let loop = try MainLoop()
        var hanging: [(Result<[IPAddress], ResolverFailure>) -> Void] = []
        var lanes: [(String, Bool)] = []
        let resolver = try HostResolver(loop: loop) { host, _, first, answer in
            lanes.append((host, first))
            if host.hasPrefix("hang") { hanging.append(answer) } else { answer(.success([IPAddress("198.18.0.9")!])) }
        }
        let added = resolver.newOwner()
        let owner = resolver.newOwner()
        var answered: [String] = []
        resolver.resolve("hang.test", family: AF_UNSPEC, owner: added) { _ in answered.append("hang.test") }
        loop.runDueWork()
        XCTAssertEqual(lanes.map(\.0), ["hang.test"], "under way, and it hangs")
        for index in 0..<3 {
            resolver.resolve("check-\(index).test", family: AF_UNSPEC, owner: owner, first: true) { _ in
                answered.append("check-\(index).test")
            }
            loop.runDueWork()
        }
        XCTAssertEqual(
            answered, ["check-0.test", "check-1.test", "check-2.test"], "the default target's lookups, behind none")
        XCTAssertTrue(lanes.dropFirst().allSatisfy(\.1), "each on the first lane: \(lanes)")
        hanging.first?(.failure(ResolverFailure(message: "timed out")))
        XCTAssertEqual(answered.last, "hang.test")
    }
}
