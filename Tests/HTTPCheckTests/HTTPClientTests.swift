import MonitorRules
import EventLoop
import Foundation
import HTTPCheck
import IntegrationSupport
import XCTest

/// libcurl's multi-socket interface on the MainLoop, against a server on loopback.
final class HTTPClientTests: XCTestCase {
    var server: LoopbackHTTPServer!
    var port: String { server.port }
    var loop: MainLoop!
    var client: HTTPClient!
    var requests: [String] = []

    override func setUpWithError() throws {
        server = try LoopbackHTTPServer()
        loop = try MainLoop()
        client = try HTTPClient(loop: loop)
    }

    override func tearDown() {
        client = nil
        loop = nil
        server?.stop()
    }

    func readLine() -> String? { server.readLine() }

    func get(_ path: String, timeoutMilliseconds: Int = 3000) throws -> CheckAnswer {
        var answer: CheckAnswer?
        let request = client.get("http://127.0.0.1:\(port)\(path)", timeoutMilliseconds: timeoutMilliseconds) { answer = $0; self.loop.quit(status: 0) }
        XCTAssertNotNil(request)
        let guardTimer = loop.schedule(after: 10_000_000_000) { self.loop.quit(status: 1) }
        _ = loop.run()
        loop.cancel(guardTimer)
        return try XCTUnwrap(answer, "no answer for \(path)")
    }

    func testAnswersAndWhatTheyMean() throws {
        let base = "http://127.0.0.1:\(port)"
        let cases: [(String, CheckAnswer.Meaning)] = [
            ("/204", .expected), ("/200", .expected), ("/200body", .portal(base + "/200body")),
            ("/200big", .portal(base + "/200big")), ("/302", .portal(base + "/login?next=1")),
            ("/511", .portal(base + "/511")), ("/500", .failed("HTTP 500")), ("/missing", .failed("HTTP 404")),
        ]
        for (path, meaning) in cases {
            let answer = try get(path)
            XCTAssertEqual(answer.meaning(checkURL: base + path), meaning, "\(path): \(answer)")
        }
        XCTAssertLessThanOrEqual(try get("/200big").bodyBytes, 64 * 1024 + 16 * 1024, "stops reading past the cap")
        XCTAssertTrue(client.resolvesAsynchronously, "the check's name is resolved off the loop (curl's resolver thread)")
        XCTAssertEqual(client.activeTransfers, 0)
    }

    func testSendsNothingThatIdentifiesTheMachine() throws {
        _ = try get("/204")
        let line = try XCTUnwrap(readLine())
        let request = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let headers = (request["headers"] as? [[String]] ?? []).map { $0.joined(separator: ": ") }
        XCTAssertEqual(headers.sorted(), ["Connection: close", "Host: 127.0.0.1:\(port)", "User-Agent: netobserver"])
    }

    func testTimeoutsRefusalsAndCancelling() throws {
        let hang = try get("/hang", timeoutMilliseconds: 300)
        XCTAssertEqual(hang.meaning(checkURL: "x"), .failed("timed out"))
        // A port nothing listens on (the server's own, once it has gone).
        server.stop()
        XCTAssertEqual(try get("/204").meaning(checkURL: "x"), .failed("connection refused or unreachable"))
        var called = false
        let request = client.get("http://127.0.0.1:\(port)/204", timeoutMilliseconds: 1000) { _ in called = true }
        request?.cancel()
        XCTAssertEqual(client.activeTransfers, 0)
        let timer = loop.schedule(after: 200_000_000) { self.loop.quit(status: 0) }
        _ = loop.run()
        loop.cancel(timer)
        XCTAssertFalse(called)
        XCTAssertEqual(loop.scheduledTimers, 0, "no timer of curl's left behind")
    }
}
