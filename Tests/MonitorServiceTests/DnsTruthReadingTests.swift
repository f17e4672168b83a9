import DBusKit
import Foundation
@testable import HelperProcess
import MonitorClientCore
import MonitorContract
@testable import MonitorService
import MonitorRules
import NetAddress
import XCTest

/// What DNS truth believes of an answer: the resolver library's reading (the question must be the one asked),
/// resolved's replies and errors, and how DnsProbeZone, the status line and the metrics say it.
final class DnsTruthReadingTests: XCTestCase {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func seed(_ name: String) throws -> (kind: UInt8, rest: [UInt8]) {
        let bytes = Array(try Data(contentsOf: root.appendingPathComponent("Fuzz/dns/corpus/\(name)")))
        return (bytes[0], Array(bytes.dropFirst()))
    }

    func testTheLibraryReadsAnswersToTheQuestionAskedAndNothingElse() throws {
        let a = try seed("a").rest
        XCTAssertEqual(
            DnsAsker.read(answer: a, name: "web.test", family: .v4),
            .addresses([.v4([198, 18, 2, 2]), .v4([198, 18, 2, 3])]))
        XCTAssertEqual(
            DnsAsker.read(answer: a, name: "WEB.test.", family: .v4),
            .addresses([.v4([198, 18, 2, 2]), .v4([198, 18, 2, 3])]))
        XCTAssertEqual(
            DnsAsker.read(answer: a, name: "other.test", family: .v4), .noAnswer("a malformed answer"),
            "an answer to another question is not believed")
        XCTAssertEqual(
            DnsAsker.read(answer: a, name: "web.test", family: .v6), .noAnswer("a malformed answer"),
            "an A answer to an AAAA question is not believed")
        XCTAssertEqual(
            DnsAsker.read(answer: try seed("cname").rest, name: "web.test", family: .v4),
            .addresses([.v4([198, 18, 2, 2])]))
        XCTAssertEqual(DnsAsker.read(answer: try seed("nxdomain").rest, name: "web.test", family: .v4), .nxdomain)
        XCTAssertEqual(DnsAsker.read(answer: try seed("servfail").rest, name: "web.test", family: .v4), .servfail)
        guard case .addresses(let six) = DnsAsker.read(answer: try seed("aaaa").rest, name: "web.test", family: .v6)
        else { return XCTFail("AAAA not read") }
        XCTAssertEqual(six.map(\.description), ["fd00::2"])
        for length in 0..<a.count {
            XCTAssertNotEqual(
                DnsAsker.read(answer: Array(a[..<length]), name: "web.test", family: .v4),
                .addresses([.v4([198, 18, 2, 2]), .v4([198, 18, 2, 3])]), "a truncated answer at \(length)")
        }
    }

    func testResolvedsRepliesAndErrorsAreRead() throws {
        let reply = try Message(wire: try seed("resolved-reply").rest)
        let (outcome, confidential) = ResolvedReply.read(.success(reply), family: .v4)
        XCTAssertEqual(outcome, .addresses([.v4([198, 18, 2, 2])]), "only the family asked")
        XCTAssertTrue(confidential)
        XCTAssertEqual(
            ResolvedReply.outcome(ofError: "org.freedesktop.resolve1.DnsError.NXDOMAIN", message: ""), .nxdomain)
        XCTAssertEqual(
            ResolvedReply.outcome(ofError: "org.freedesktop.resolve1.DnsError.SERVFAIL", message: ""), .servfail)
        XCTAssertEqual(
            ResolvedReply.outcome(ofError: "org.freedesktop.resolve1.DnsError.REFUSED", message: ""), .refused)
        XCTAssertEqual(
            ResolvedReply.outcome(ofError: "org.freedesktop.resolve1.DnsError.BADCOOKIE", message: ""), .otherRcode(-1))
        XCTAssertEqual(ResolvedReply.outcome(ofError: "org.freedesktop.resolve1.NoSuchRR", message: ""), .noData)
        XCTAssertEqual(
            ResolvedReply.outcome(ofError: "org.freedesktop.DBus.Error.NoReply", message: "x"), .noAnswer("timed out"))
        XCTAssertEqual(
            ResolvedReply.outcome(
                ofError: "org.freedesktop.resolve1.NoNameServers", message: String(repeating: "m", count: 999)),
            .noAnswer("systemd-resolved: " + String(repeating: "m", count: 160)), "a long message is cut")
        XCTAssertEqual(SystemResolver.noCache, 1 << 12)
        XCTAssertEqual(SystemResolver.confidential, 1 << 18)
    }

    /// Issue 54 N33: a reply of 400,000 addresses from resolve1's owner cost one 899 ms turn and 160 MB, decoded
    /// whole. It is counted first, and one with more addresses than any answer can hold is not read.
    func testAHugeReplyFromResolvedIsCountedNotDecoded() throws {
        func reply(_ count: Int) throws -> Message {
            let message = try Message.signal(path: "/org/freedesktop/resolve1", interface: "a.b", name: "C")
            let entry = DBusValue.structure([.int32(2), .int32(2), .array(.byte, [198, 18, 2, 2].map { .byte($0) })])
            try message.append([
                .array(.structure([.int32, .int32, .array(.byte)]), Array(repeating: entry, count: count)),
                .string("web.test"), .uint64(0),
            ])
            return message
        }
        XCTAssertEqual(
            ResolvedReply.read(.success(try reply(3)), family: .v4).0,
            .addresses(Array(repeating: .v4([198, 18, 2, 2]), count: 3)))
        let huge = try reply(200_000)
        XCTAssertEqual(huge.firstArrayCount, 200_000)
        let (outcome, _) = ResolvedReply.read(.success(huge), family: .v4)
        XCTAssertEqual(outcome, .noAnswer("systemd-resolved answered with 200000 addresses (at most 4096 are read)"))
        let wrongForm = try Message.signal(path: "/x", interface: "a.b", name: "C")
        try wrongForm.append([.string("x")])
        XCTAssertEqual(
            ResolvedReply.read(.success(wrongForm), family: .v4).0,
            .noAnswer("systemd-resolved answered in an unexpected form"))
    }

    func testResolvedsLinkObjectsAreNamedAsSdBusEscapesThem() {
        XCTAssertEqual(ResolvedLink.path(3), "/org/freedesktop/resolve1/link/_33")
        XCTAssertEqual(ResolvedLink.path(12), "/org/freedesktop/resolve1/link/_312")
    }

    /// A Host in /etc/hosts is resolved there (glibc's `files` first): its fresh lookup is the file's answer.
    func testAHostsFileNameIsAnsweredByTheFile() {
        let text: Substring = """
            127.0.0.1 localhost
            # 198.18.0.7 commented.test
            198.18.2.2\tdual.test web  # a comment
            fd00:2::2 DUAL.test.
            not-an-address nothing.test
            """
        XCTAssertEqual(HostsFile.addresses(of: "dual.test", family: .v4, in: text), [.v4([198, 18, 2, 2])])
        XCTAssertEqual(HostsFile.addresses(of: "dual.test.", family: .v6, in: text)?.map(\.description), ["fd00:2::2"])
        XCTAssertEqual(HostsFile.addresses(of: "web", family: .v6, in: text), [], "named, without that family")
        XCTAssertNil(HostsFile.addresses(of: "commented.test", family: .v4, in: text))
        XCTAssertNil(HostsFile.addresses(of: "nothing.test", family: .v4, in: text))
        XCTAssertNil(HostsFile.addresses(of: "example.test", family: .v4, in: text))
    }

    /// The hosts file goes first, whatever resolv.conf names (none at all, or only the stub): a hosts-file Host is
    /// never `failing` for want of a nameserver (it read so before, with an empty resolv.conf).
    func testAHostsFileHostIsTheFilesAnswerEvenWithNoNameserver() {
        let hosts: (String, IPFamily) -> [IPAddress]? = { name, _ in name == "dual.test" ? [.v4([198, 18, 2, 2])] : nil
        }
        let host = DnsQuestion(kind: .host, name: "dual.test", family: .v4)
        for resolvers in [[], ["127.0.0.53"], ["198.18.0.1"]] {
            XCTAssertEqual(
                DnsAsker.answerWithoutAsking(host, resolvers: resolvers, viaStub: false, hosts: hosts)?.outcome,
                .addresses([.v4([198, 18, 2, 2])]), "\(resolvers)")
        }
        let other = DnsQuestion(kind: .host, name: "other.test", family: .v4)
        XCTAssertEqual(
            DnsAsker.answerWithoutAsking(other, resolvers: [], viaStub: true, hosts: hosts)?.outcome,
            .noAnswer("/etc/resolv.conf names no nameserver"))
        XCTAssertEqual(
            DnsAsker.answerWithoutAsking(other, resolvers: ["127.0.0.53"], viaStub: false, hosts: hosts)?.outcome,
            .noAnswer(DnsAsker.notAskedWords))
        XCTAssertNil(DnsAsker.answerWithoutAsking(other, resolvers: ["198.18.0.1"], viaStub: false, hosts: hosts))
        // The probe zone's and the interception's labels are never the hosts file's.
        let probe = DnsQuestion(kind: .probeZone, name: "dual.test", family: .v4)
        XCTAssertNil(DnsAsker.answerWithoutAsking(probe, resolvers: ["198.18.0.1"], viaStub: true, hosts: hosts))
    }

    func testTheResolvConfStubIsKnown() {
        XCTAssertTrue(DnsAsker.onlyStub(["127.0.0.53"]))
        XCTAssertTrue(DnsAsker.onlyStub(["127.0.0.53", "127.0.0.54"]))
        XCTAssertFalse(DnsAsker.onlyStub(["127.0.0.53", "198.18.0.1"]))
        XCTAssertFalse(DnsAsker.onlyStub([]))
    }

    func testDnsProbeZoneTakesAZoneAndRefusesEverythingElseChangingNothing() {
        var settings = MonitorSettings()
        for good in ["", "probe.example.test", "probe.example.test.", "x-1.test"] {
            XCTAssertNoThrow(try settings.set(.dnsProbeZone, text: good), good)
            XCTAssertEqual(settings.dnsProbeZone, good)
        }
        settings.dnsProbeZone = "kept.test"
        for bad in [
            "198.18.0.1", "fd00::1", "bad..zone", ".lead", "-x.test", "a b.test", "trailing..", "ä.test",
            String(repeating: "a.", count: 127) + "aa", "x.123",
        ] {
            XCTAssertThrowsError(try settings.set(.dnsProbeZone, text: bad), bad)
            XCTAssertEqual(settings.dnsProbeZone, "kept.test", bad)
        }
    }

    /// Issue 54 N32: a zone of 237–253 bytes was taken, yet its probe name (a 16-hex-digit label before it) could
    /// never be asked, so every lookup failed: a false `limited`, Blame `dns`. The longest zone taken is one whose
    /// probe name fits.
    func testAProbeZoneWhoseProbeNameCannotBeAskedIsRefused() throws {
        var settings = MonitorSettings()
        let longest = String(repeating: "abcdefg.", count: 29) + "abcd" // 236 bytes
        XCTAssertEqual(longest.utf8.count, MonitorSettings.longestProbeZone)
        XCTAssertNoThrow(try settings.set(.dnsProbeZone, text: longest))
        XCTAssertNoThrow(try settings.set(.dnsProbeZone, text: longest + "."))
        XCTAssertLessThanOrEqual(("0123456789abcdef." + longest).utf8.count, 253, "its probe name is a name")
        for tooLong in [longest + "e", String(repeating: "abcdefg.", count: 31) + "abcd"] {
            XCTAssertThrowsError(try settings.set(.dnsProbeZone, text: tooLong)) { error in
                XCTAssertTrue("\(error)".contains("236"), "\(error)")
            }
            XCTAssertEqual(settings.dnsProbeZone, longest + ".")
        }
    }

    func testTheStatusLineSaysDNSTruth() {
        func line(_ values: [String: DBusValue]) -> String { Snapshot(values).dnsLine }
        XCTAssertEqual(
            line([
                "Dns": .string("ok"), "DnsServer": .string("192.0.2.53"), "DnsTransport": .string("udp"),
                "DnsRoundTripTime": .uint64(12_000),
            ]), "ok via 192.0.2.53 (udp), 12.0 ms")
        XCTAssertEqual(
            line(["Dns": .string("ok"), "DnsServer": .string("resolved"), "DnsTransport": .string("")]),
            "ok via resolved")
        XCTAssertEqual(
            line([
                "Dns": .string("failing"),
                "Reason": .string("DNS fails: new lookups of web.test: SERVFAIL (cached answers may still work)"),
            ]), "failing: new lookups of web.test: SERVFAIL (cached answers may still work)")
        XCTAssertEqual(
            line(["Dns": .string("unencrypted")]),
            "unencrypted: resolved is set to DNS-over-TLS but answered in plain text")
        XCTAssertTrue(line(["Dns": .string("intercepted")]).hasPrefix("intercepted: "))
        let screen = Snapshot([
            "Dns": .string("slow"), "DnsServer": .string("198.18.0.1"), "DnsProbeZone": .string("p.test"),
        ])
        .screen()
        XCTAssertTrue(screen.contains("DNS:          slow via 198.18.0.1 (probe zone p.test)"), screen)
        XCTAssertFalse(Snapshot([:]).screen().contains("DNS:"), "an older service says nothing of DNS truth")
    }
}
