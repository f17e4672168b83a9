import EventLoop
import Foundation
import HTTPCheck
import IntegrationSupport
@testable import MonitorService
import NetCore
import Probe
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
    private func run(_ url: String, limit: Int = 3_000, mayPointInward: Bool,
                     lookup: @escaping HostResolver.Lookup) throws -> (CheckAnswer.Meaning, UInt64, UInt64) {
        let resolver = try HostResolver(loop: loop, lookup: lookup)
        var meaning: CheckAnswer.Meaning?
        var longestTurn: UInt64 = 0
        var lastTick = loop.now()
        let ticker = loop.schedule(after: 5_000_000, repeats: true) { [loop] in
            let now = loop!.now()
            longestTurn = max(longestTurn, now - lastTick)
            lastTick = now
        }
        let started = loop.now()
        let check = CheckRun(url: url, limitMilliseconds: limit, mayPointInward: mayPointInward, loop: loop, resolver: resolver,
                             http: http) { [loop] answer in
            meaning = answer
            loop!.quit(status: 0)
        }
        loop.schedule(after: UInt64(limit + 2_000) * 1_000_000) { [loop] in loop!.quit(status: 1) }
        _ = loop.run()
        loop.cancel(ticker)
        withExtendedLifetime(check) {}
        return (try XCTUnwrap(meaning, "the check ended"), (loop.now() - started) / 1_000_000, longestTurn / 1_000_000)
    }

    private static func answering(_ address: String) -> HostResolver.Lookup {
        { _, _ in .success([IPAddress(address)].compactMap { $0 }) }
    }

    func testANameResolvingIntoThisMachineIsRefusedBeforeAnyConnection() throws {
        let (meaning, _, _) = try run("http://check.test:\(port)/204", mayPointInward: false, lookup: Self.answering("127.0.0.1"))
        XCTAssertEqual(meaning, .failed(CheckRun.inward))
        let (literal, _, _) = try run("http://0x7f000001:\(port)/204", mayPointInward: false, lookup: Self.answering("198.18.0.1"))
        XCTAssertEqual(literal, .failed(CheckRun.inward), "inet_aton's forms are addresses too")
        // The first request the server hears is the next one's.
        _ = try run("http://check.test:\(port)/200", mayPointInward: true, lookup: Self.answering("127.0.0.1"))
        XCTAssertTrue(try XCTUnwrap(readLine()).contains("\"path\": \"/200\""), "the refused checks sent nothing")
    }

    func testTheServiceResolvesAndCurlConnectsToThatAddress() throws {
        let (meaning, _, _) = try run("http://check.test:\(port)/204", mayPointInward: true, lookup: Self.answering("127.0.0.1"))
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
        let (meaning, took, turn) = try run("http://check.test:\(port)/hang", limit: 600, mayPointInward: true,
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
