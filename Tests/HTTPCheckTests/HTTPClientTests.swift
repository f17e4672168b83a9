import MonitorRules
import EventLoop
import Foundation
import HTTPCheck
import IntegrationSupport
import TestTime
import Timekeeping
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
        try get(
            "http://127.0.0.1:\(port)\(path)", timeoutMilliseconds: timeoutMilliseconds, options: HTTPRequestOptions())
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
        XCTAssertTrue(
            client.resolvesAsynchronously, "the check's name is resolved off the loop (curl's resolver thread)")
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

    /// A GET of `url` with `options`, answered on the loop.
    func get(
        _ url: String, pin: HTTPClient.Pin? = nil, timeoutMilliseconds: Int = 5000, options: HTTPRequestOptions
    ) throws -> CheckAnswer {
        var answer: CheckAnswer?
        let request = client.get(url, pinnedTo: pin, timeoutMilliseconds: timeoutMilliseconds, options: options) {
            answer = $0
            self.loop.quit(status: 0)
        }
        XCTAssertNotNil(request)
        let guardTimer = loop.schedule(after: 10_000_000_000) { self.loop.quit(status: 1) }
        _ = loop.run()
        loop.cancel(guardTimer)
        return try XCTUnwrap(answer, "no answer for \(url)")
    }

    func testTheEchoHeaderAndTheRequestsOwnHeadersAndBody() throws {
        let nonce = "0123456789abcdef0123456789abcdef"
        let echoed = try get(
            "http://127.0.0.1:\(port)/echo?netobserver-nonce=\(nonce)",
            options: HTTPRequestOptions(headers: ["X-Netobserver-Nonce: \(nonce)"]))
        XCTAssertEqual(echoed.echo, nonce)
        XCTAssertEqual(echoed.meaning(checkURL: "x", nonce: nonce), .expected)
        let line = try XCTUnwrap(readLine())
        XCTAssertTrue(line.contains("\"X-Netobserver-Nonce\", \"\(nonce)\""), line)
        // A plain 204 has no echo: intercepted.
        XCTAssertEqual(try get("/204").meaning(checkURL: "x", nonce: nonce), .intercepted)
        let json = try get(
            "http://127.0.0.1:\(port)/json",
            options: HTTPRequestOptions(
                headers: ["Accept: application/captive+json"],
                keepBody: true, bodyLimit: 4096))
        XCTAssertEqual(String(decoding: json.body, as: UTF8.self), #"{"captive": false}"#)
        _ = readLine()
        let accept = try XCTUnwrap(readLine())
        XCTAssertTrue(accept.contains("application/captive+json"), accept)
        // The body kept stops at its cap, and says it went past.
        let big = try get(
            "http://127.0.0.1:\(port)/200big", options: HTTPRequestOptions(keepBody: true, bodyLimit: 4096))
        XCTAssertLessThanOrEqual(big.body.count, 4096)
        XCTAssertGreaterThan(big.bodyBytes, 4096)
    }

    func testHTTPSIsVerifiedAgainstTheAuthoritiesGiven() throws {
        let certificates = try LoopbackHTTPServer.makeCertificates(san: "DNS:check.test")
        defer { try? FileManager.default.removeItem(at: certificates) }
        let trusted = try LoopbackHTTPServer([
            "--tls", certificates.appendingPathComponent("server.pem").path,
            certificates.appendingPathComponent("server.key").path,
        ])
        defer { trusted.stop() }
        let rogue = try LoopbackHTTPServer([
            "--tls", certificates.appendingPathComponent("rogue.pem").path,
            certificates.appendingPathComponent("rogue.key").path,
        ])
        defer { rogue.stop() }
        let ca = certificates.appendingPathComponent("ca.pem").path
        func secure(_ server: LoopbackHTTPServer, caFile: String?, path: String = "/204") throws -> CheckAnswer {
            let pin = HTTPClient.Pin(host: "check.test", port: UInt16(server.port) ?? 0, address: "127.0.0.1")
            return try get(
                "https://check.test:\(server.port)\(path)", pin: pin,
                options: HTTPRequestOptions(secure: true, caFile: caFile))
        }
        XCTAssertEqual(try secure(trusted, caFile: ca).meaning(checkURL: "x"), .expected)
        XCTAssertEqual(
            try secure(rogue, caFile: ca).meaning(checkURL: "x"), .failed("the server's certificate is not trusted"))
        // Transfer after transfer with the system's authorities (libcurl keeps the store it built from the bundle):
        // the test CA is never among them.
        for _ in 0..<5 {
            XCTAssertEqual(
                try secure(trusted, caFile: nil).meaning(checkURL: "x"),
                .failed("the server's certificate is not trusted"),
                "the test CA is not the system's")
        }
        // The name is checked too: the same certificate for another name is not trusted.
        let pin = HTTPClient.Pin(host: "other.test", port: UInt16(trusted.port) ?? 0, address: "127.0.0.1")
        let misnamed = try get(
            "https://other.test:\(trusted.port)/204", pin: pin, options: HTTPRequestOptions(secure: true, caFile: ca))
        guard case .failed = misnamed.meaning(checkURL: "x") else {
            return XCTFail("a certificate for another name was taken")
        }
        // A secure request never goes over plain HTTP, nor a plain one over HTTPS.
        let plainURL = try get("http://127.0.0.1:\(port)/204", options: HTTPRequestOptions(secure: true, caFile: ca))
        XCTAssertEqual(plainURL.meaning(checkURL: "x"), .failed("the URL's scheme is not allowed here"))
        XCTAssertEqual(client.activeTransfers, 0)
    }
}
