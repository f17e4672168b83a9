@testable import HelperProcess
import EventLoop
import MonitorRules
import NetAddress
import ProbeRules
import ReachabilityRules
import Timekeeping
import TrafficCensus
import XCTest

/// The wire between the daemon and its blocking helper: every request and answer comes back as it was
/// sent, and a frame that is short, long, padded or lying is refused, never trapped on.
final class HelperWireTests: XCTestCase {
    private let requests: [HelperRequest] = [
        .resolve(host: "example.test", family: 10),
        .resolve(host: "", family: 0),
        .sample(
            host: .v4([198, 18, 0, 1]), route: HostRoute(interfaceIndex: 2, gateway: .v4([198, 18, 0, 254])),
            sources: [
                .v4([198, 18, 0, 2]),
                .v6(
                    AddressBytes(Array(repeating: 0xfe, count: 16)),
                    zone: .init(index: 3, name: "eth0")),
            ],
            now: Instant(nanoseconds: .max)),
        .sample(
            host: .v6(AddressBytes([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 12))), route: nil, sources: [],
            now: .origin),
        .sample(
            host: .v4([198, 18, 0, 1]), route: HostRoute(interfaceIndex: 7, gateway: nil), sources: [], now: .origin),
        .write(directory: "/var/lib/netobserver", name: "history.7", text: "outage 1 2 none\n€"),
        .remove(directory: "/d", name: "history.3"),
        .read(directory: "/d", name: "settings", maximumSize: 65_536),
        .barrier,
        .askDns(DnsQuestion(kind: .host, name: "example.test", family: .v4), limitSeconds: 5, viaStub: false),
        .askDns(
            DnsQuestion(kind: .interception, name: "0123456789abcdef.invalid.", family: .v6), limitSeconds: 60,
            viaStub: true),
    ]

    private let answers: [HelperAnswer] = [
        .resolved(.success([.v4([127, 0, 0, 1]), .v6(AddressBytes(Array(repeating: 0, count: 15) + [1]))])),
        .resolved(.failure(ResolverFailure(message: "cannot resolve x: no address"))),
        .sampled(
            .init(
                result: .success(TrafficSample(connections: 18_000, receivingRemotes: 3, retransmittingRemotes: 1)),
                cost: .milliseconds(33), dumpCost: .milliseconds(31))),
        .sampled(.init(result: .failure(.incomplete), cost: .zero, dumpCost: .seconds(1))),
        .sampled(
            .init(
                result: .failure(.refused(SystemError("sock_diag dump", errno: 22))), cost: .microseconds(5),
                dumpCost: .zero)),
        .written(nil),
        .written(SystemError("mkdir /x", errno: 20)),
        .removed(true),
        .removed(false),
        .read(.success(nil)),
        .read(.success(Array("Host=localhost\n".utf8))),
        .read(.success([])),
        .read(.failure(AtomicFile.Refused(description: "is a symbolic link"))),
        .passed,
        .dnsAnswered(
            DnsReply(
                outcome: .addresses([.v4([198, 18, 9, 1]), .v6(AddressBytes(Array(repeating: 0xfd, count: 16)))]),
                server: "198.18.9.1", transport: .udp, roundTrip: .microseconds(250), encryptionExpected: false,
                resolvers: ["198.18.9.1", "fd00::53"])),
        .dnsAnswered(DnsReply(outcome: .nxdomain, server: "resolved", transport: .tls, encryptionExpected: true)),
        .dnsAnswered(DnsReply(outcome: .noData, server: "[fd00::53]#5353", transport: .tcp)),
        .dnsAnswered(DnsReply(outcome: .servfail)),
        .dnsAnswered(DnsReply(outcome: .refused, transport: .unknown)),
        .dnsAnswered(DnsReply(outcome: .otherRcode(-1))),
        .dnsAnswered(DnsReply(outcome: .noAnswer("timed out"), resolvers: ["127.0.0.53"])),
    ]

    private func body(_ frame: [UInt8]) -> ArraySlice<UInt8> {
        frame[HelperWire.headerLength...]
    }

    func testEveryRequestAndAnswerComesBackAsItWasSent() {
        for (number, request) in requests.enumerated() {
            for quiet in [false, true] {
                let frame = HelperWire.frame(id: UInt64(number) + 1, lane: .census, quiet: quiet, request)
                XCTAssertEqual(HelperWire.frameLength(frame[..<4]), frame.count - 4)
                let decoded = HelperWire.request(body(frame))
                XCTAssertEqual(decoded?.id, UInt64(number) + 1)
                XCTAssertEqual(decoded?.lane, .census)
                XCTAssertEqual(decoded?.quiet, quiet)
                XCTAssertEqual(decoded?.request, request)
            }
        }
        for (number, answer) in answers.enumerated() {
            let frame = HelperWire.frame(id: UInt64.max - UInt64(number), lane: .history, answer)
            let decoded = HelperWire.answer(body(frame))
            XCTAssertEqual(decoded?.id, UInt64.max - UInt64(number))
            XCTAssertEqual(decoded?.lane, .history)
            XCTAssertEqual(decoded?.answer, answer)
        }
    }

    /// A stream as read so far: whole frames one after another, then what is not whole yet.
    func testAStreamSplitsIntoItsFrames() {
        let first = HelperWire.frame(id: 1, lane: .lookups, .resolve(host: "a.test", family: 0))
        let second = HelperWire.frame(id: 2, lane: .history, .barrier)
        let stream = first + second + second.prefix(5)
        XCTAssertEqual(HelperWire.next(in: stream, from: 0), .body(4..<first.count))
        XCTAssertEqual(
            HelperWire.next(in: stream, from: first.count), .body(first.count + 4..<first.count + second.count))
        XCTAssertEqual(
            HelperWire.next(in: stream, from: first.count + second.count), .incomplete, "a header and a byte")
        XCTAssertEqual(HelperWire.next(in: Array(first.prefix(3)), from: 0), .incomplete, "not a whole header")
        XCTAssertEqual(HelperWire.next(in: [0xff, 0xff, 0xff, 0xff, 0], from: 0), .outOfBounds)
    }

    func testAZoneComesBackWithItsName() {
        let zoned = IPAddress.v6(
            AddressBytes([0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]), zone: .init(index: 4, name: "wlan0"))
        let frame = HelperWire.frame(id: 1, lane: .lookups, .resolved(.success([zoned])))
        guard case .resolved(.success(let addresses))? = HelperWire.answer(body(frame))?.answer else {
            return XCTFail("not decoded")
        }
        XCTAssertEqual(addresses.first?.description, zoned.description)
    }

    func testEveryShortenedOrPaddedFrameIsRefused() {
        for request in requests {
            let whole = body(HelperWire.frame(id: 9, lane: .settings, request))
            for cut in 0..<whole.count {
                XCTAssertNil(HelperWire.request(whole.prefix(cut)), "\(request) cut to \(cut) bytes")
            }
            XCTAssertNil(HelperWire.request(ArraySlice(Array(whole) + [0])), "\(request) with a byte more")
        }
        for answer in answers {
            let whole = body(HelperWire.frame(id: 9, lane: .settings, answer))
            for cut in 0..<whole.count {
                XCTAssertNil(HelperWire.answer(whole.prefix(cut)), "\(answer) cut to \(cut) bytes")
            }
            XCTAssertNil(HelperWire.answer(ArraySlice(Array(whole) + [0])), "\(answer) with a byte more")
        }
    }

    /// Only a failure answers a quiet request: a history written every 10 s wakes nobody.
    func testWhatCountsAsAFailure() {
        XCTAssertTrue(HelperAnswer.written(SystemError("fsync /d/history", errno: 5)).isFailure)
        XCTAssertFalse(HelperAnswer.written(nil).isFailure)
        XCTAssertFalse(HelperAnswer.removed(false).isFailure, "a history already gone is no failure")
        XCTAssertTrue(HelperAnswer.resolved(.failure(ResolverFailure(message: "no"))).isFailure)
        XCTAssertTrue(
            HelperAnswer.sampled(.init(result: .failure(.incomplete), cost: .zero, dumpCost: .zero)).isFailure)
        XCTAssertFalse(HelperAnswer.passed.isFailure)
    }

    /// Each request has exactly one kind of answer: a helper that answers a lookup with a file is replaced,
    /// and no caller has to check what it was given.
    func testEachRequestHasOneKindOfAnswer() {
        func kind(_ request: HelperRequest) -> Int {
            switch request {
            case .resolve: 0
            case .sample: 1
            case .write: 2
            case .remove: 3
            case .read: 4
            case .barrier: 5
            case .askDns: 6
            }
        }
        for request in requests {
            let matching = answers.filter { $0.answers(request) }
            XCTAssertFalse(matching.isEmpty, "\(request) has an answer")
            for answer in answers where answer.answers(request) {
                XCTAssertFalse(
                    requests.contains { kind($0) != kind(request) && answer.answers($0) },
                    "\(answer) answers only one kind of request")
            }
        }
        XCTAssertFalse(HelperAnswer.read(.success(nil)).answers(.resolve(host: "x", family: 0)))
        XCTAssertFalse(HelperAnswer.passed.answers(.write(directory: "/d", name: "settings", text: "")))
    }

    func testLyingLengthsLanesKindsAndCountsAreRefused() {
        XCTAssertNil(HelperWire.frameLength([0xff, 0xff, 0xff, 0xff]), "4 GiB")
        XCTAssertNil(HelperWire.frameLength([0x01, 0x00, 0x10, 0x00]), "one byte over the largest frame")
        XCTAssertNil(HelperWire.frameLength([0x08, 0, 0, 0]), "shorter than a number and a lane")
        XCTAssertEqual(HelperWire.frameLength([0x00, 0x00, 0x10, 0x00]), HelperWire.maximumFrame)
        var frame = Array(body(HelperWire.frame(id: 1, lane: .lookups, .removed(true))))
        frame[8] = 200
        XCTAssertNil(HelperWire.answer(frame[...]), "no such lane")
        frame[8] = HelperWire.quietBit
        XCTAssertNil(HelperWire.answer(frame[...]), "an answer is never quiet")
        frame[8] = 0
        frame[9] = 99
        XCTAssertNil(HelperWire.answer(frame[...]), "no such kind")
        frame[9] = 7
        frame[10] = 2
        XCTAssertNil(HelperWire.answer(frame[...]), "a flag is 0 or 1")
        // A resolved answer claiming four billion addresses in a few bytes.
        let lying: [UInt8] =
            Array(repeating: 0, count: 8) + [0, 0] + [0xff, 0xff, 0xff, 0xff] + [4, 0, 0, 0, 127, 0, 0, 1]
        XCTAssertNil(HelperWire.answer(lying[...]))
        // A string that is not UTF-8.
        let notText: [UInt8] = Array(repeating: 0, count: 8) + [0, 1] + [2, 0, 0, 0, 0xc3, 0x28]
        XCTAssertNil(HelperWire.answer(notText[...]))
    }
}
