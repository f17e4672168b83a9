@testable import DaemonWorlds
import EventLoop
import Foundation
import HTTPCheck
import IntegrationSupport
import MonitorRules
import NetAddress
import NetCore
import Probe
import ProbeRules
import Reachability
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// One run of the HTTP check, as the daemon drives it, against a loopback server and a
/// resolver the test controls: the service resolves, curl is handed the address, an
/// address into this machine is refused unless the administrator chose the URL, and the
/// run ends within its limit whatever the resolver or the server do.
final class CheckRunTests: XCTestCase {
    private var server: LoopbackHTTPServer!
    private var port: String { server.port }
    private var loop: MainLoop!
    private var http: LazyHTTPClient!

    override func setUpWithError() throws {
        server = try LoopbackHTTPServer()
        loop = try MainLoop()
        http = LazyHTTPClient(loop: loop)
    }

    override func tearDown() {
        http = nil
        loop = nil
        server?.stop()
    }

    private func readLine() -> String? { server.readLine() }

    /// Runs one check with `lookup` as the resolver; returns its meaning, how long it took and the longest loop turn.
    private func run(
        _ url: String, limit: Int = 3_000, mayPointInward: Bool,
        isThisMachine: @escaping (IPAddress) -> Bool = { _ in false },
        first: Bool = false, othersWaiting: [String] = [],
        lookup: @escaping HostResolver.Lookup
    ) throws -> (CheckAnswer.Meaning, UInt64, UInt64) {
        let resolver = try HostResolver(loop: loop, lookup: lookup)
        // Other targets' lookups, asked before the check's: each its own owner, as targets are.
        for name in othersWaiting { resolver.resolve(name, family: AF_UNSPEC, owner: resolver.newOwner()) { _ in } }
        var meaning: CheckAnswer.Meaning?
        var longestTurn = Duration.zero
        var lastTick = loop.now()
        let ticker = loop.schedule(after: 5 * ms, repeats: true) { [loop] in
            let now = loop!.now()
            longestTurn = max(longestTurn, now - lastTick)
            lastTick = now
        }
        let started = loop.now()
        let check = CheckRun(
            url: url, limitMilliseconds: limit, mayPointInward: mayPointInward, isThisMachine: isThisMachine,
            first: first, loop: loop, resolver: resolver, http: http
        ) { [loop] answer in
            meaning = answer.meaning(checkURL: url)
            loop!.quit(status: 0)
        }
        loop.schedule(after: .milliseconds(limit + 2_000)) { [loop] in loop!.quit(status: 1) }
        _ = loop.run()
        loop.cancel(ticker)
        withExtendedLifetime(check) {}
        return (
            try XCTUnwrap(meaning, "the check ended"), (loop.now() - started).milliseconds, longestTurn.milliseconds
        )
    }

    private static func answering(_ address: String) -> HostResolver.Lookup {
        { _, _ in .success([IPAddress(address)].compactMap { $0 }) }
    }

    func testANameResolvingIntoThisMachineIsRefusedBeforeAnyConnection() throws {
        let (meaning, _, _) = try run(
            "http://check.test:\(port)/204", mayPointInward: false, lookup: Self.answering("127.0.0.1"))
        XCTAssertEqual(meaning, .failed(CheckRun.inward))
        let (literal, _, _) = try run(
            "http://0x7f000001:\(port)/204", mayPointInward: false, lookup: Self.answering("198.18.0.1"))
        XCTAssertEqual(literal, .failed(CheckRun.inward), "inet_aton's forms are addresses too")
        // The first request the server hears is the next one's.
        _ = try run("http://check.test:\(port)/200", mayPointInward: true, lookup: Self.answering("127.0.0.1"))
        XCTAssertTrue(try XCTUnwrap(readLine()).contains("\"path\": \"/200\""), "the refused checks sent nothing")
    }

    /// This machine's own addresses (a LAN address, not only loopback) are refused like loopback, by name and literal.
    func testANameResolvingToThisMachinesOwnAddressIsRefused() throws {
        let own: (IPAddress) -> Bool = { $0 == IPAddress("127.0.0.1") || $0 == IPAddress("198.18.0.2") }
        let (named, _, _) = try run(
            "http://me.test:\(port)/204", mayPointInward: false, isThisMachine: own,
            lookup: Self.answering("198.18.0.2"))
        XCTAssertEqual(named, .failed(CheckRun.inward))
        var table = LinkTable()
        table.apply(
            .newAddress(InterfaceAddress(index: 2, address: try XCTUnwrap(IPAddress("198.18.0.2")), prefixLength: 24)))
        XCTAssertTrue(table.isLocal(try XCTUnwrap(IPAddress("198.18.0.2"))))
        XCTAssertFalse(table.isLocal(try XCTUnwrap(IPAddress("198.18.0.3"))))
        let (mapped, _, _) = try run(
            "http://[::ffff:198.18.0.2]:\(port)/204", mayPointInward: false,
            isThisMachine: { table.isLocal($0) }, lookup: Self.answering("198.18.0.9"))
        XCTAssertEqual(mapped, .failed(CheckRun.inward), "an IPv4-mapped form of this machine's address")
        _ = try run("http://check.test:\(port)/200", mayPointInward: true, lookup: Self.answering("127.0.0.1"))
        XCTAssertTrue(try XCTUnwrap(readLine()).contains("\"path\": \"/200\""), "the refused checks sent nothing")
    }

    /// CheckURL and SecureCheckURL side by side: each may lead inward only when the administrator chose it. A
    /// CheckURL from the command line does not let a SecureCheckURL Set over D-Bus reach this machine.
    func testEachCheckURLHasItsOwnInwardPermission() throws {
        let resolver = try HostResolver(loop: loop, lookup: Self.answering("127.0.0.1"))
        let settings = CheckConfiguration(
            url: "http://check.test:\(port)/204", secureURL: "https://secure.test:\(port)/204",
            echo: false, plainMayPointInward: true, secureMayPointInward: false)
        var meaning: CheckAnswer.Meaning?
        let run = CheckPairRun(
            settings, caFile: nil, family: .v4, limitMilliseconds: 3_000, isThisMachine: { _ in false }, first: true,
            loop: loop, resolver: resolver, http: http
        ) { [loop] in
            meaning = $0
            loop!.quit(status: 0)
        }
        loop.schedule(after: 5_000_000_000) { [loop] in loop!.quit(status: 1) }
        _ = loop.run()
        withExtendedLifetime(run) {}
        XCTAssertEqual(
            meaning,
            .limited(
                reason: "HTTPS fails on this network: https://secure.test:\(port)/204: \(CheckRun.inward)",
                partial: true), "the plain check reached the loopback server, the secure one was refused")
        XCTAssertTrue(try XCTUnwrap(readLine()).contains("\"path\": \"/204\""), "only the plain check's request")
    }

    /// The default target's check lookups go first: three other targets' names that hang the resolver thread
    /// do not hold up a check host the hosts file answers (it used to wait behind them and time out).
    func testTheDefaultTargetsCheckLookupGoesBeforeOtherTargets() throws {
        let lookup: HostResolver.Lookup = { name, _ in
            if name.hasPrefix("hang") { usleep(1_500_000) }
            return name == "check.test"
                ? .success([IPAddress("127.0.0.1")].compactMap { $0 })
                : .failure(HostResolver.Failure(message: "cannot resolve \(name): no answer"))
        }
        let others = ["hang1.test", "hang2.test", "hang3.test"]
        let (meaning, took, _) = try run(
            "http://check.test:\(port)/204", limit: 2_500, mayPointInward: true, first: true,
            othersWaiting: others, lookup: lookup)
        XCTAssertEqual(meaning, .expected)
        XCTAssertLessThan(took, 2_000, "at most the one lookup under way when it was asked")
    }

    func testTheServiceResolvesAndCurlConnectsToThatAddress() throws {
        let (meaning, _, _) = try run(
            "http://check.test:\(port)/204", mayPointInward: true, lookup: Self.answering("127.0.0.1"))
        XCTAssertEqual(meaning, .expected)
        let request = try XCTUnwrap(readLine())
        XCTAssertTrue(request.contains("\"Host\", \"check.test:\(port)\""), "the URL's name goes in Host: \(request)")
    }

    func testAHangingLookupEndsTheCheckAtItsLimitWithoutStallingTheLoop() throws {
        let (meaning, took, turn) = try run("http://hang.test:\(port)/204", limit: 400, mayPointInward: true) { _, _ in
            usleep(1_500_000)
            return .failure(HostResolver.Failure(message: "cannot resolve hang.test: no answer"))
        }
        XCTAssertEqual(meaning, .failed("cannot resolve hang.test: no answer within 400 ms"))
        XCTAssertLessThan(took, 1_000, "ended at its limit, not when the lookup came back")
        print("measured hanging lookup: check ended after \(took) ms, longest loop turn \(turn) ms")
        XCTAssertLessThan(turn, 200, "the loop kept turning")
    }

    func testAServerThatNeverAnswersEndsTheCheckAtItsLimit() throws {
        let (meaning, took, turn) = try run(
            "http://check.test:\(port)/hang", limit: 600, mayPointInward: true,
            lookup: Self.answering("127.0.0.1"))
        guard case .failed(let why) = meaning else { return XCTFail("\(meaning)") }
        XCTAssertTrue(why.contains("timed out"), why)
        XCTAssertLessThan(took, 1_500)
        print("measured silent server: check ended after \(took) ms, longest loop turn \(turn) ms")
    }

    func testAFailedLookupIsTheReason() throws {
        let (meaning, _, _) = try run("http://nx.test:\(port)/204", mayPointInward: true) { host, _ in
            .failure(HostResolver.Failure(message: "cannot resolve \(host): Name or service not known"))
        }
        XCTAssertEqual(meaning, .failed("cannot resolve nx.test: Name or service not known"))
    }
}
