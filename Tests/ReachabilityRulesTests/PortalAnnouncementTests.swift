import NetAddress
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// RFC 8910's option 37 read from what the kernel hands over, and the core's table of announcements:
/// one per known interface, replaced by a later one, ended by the interface going down or away.
final class PortalAnnouncementTests: XCTestCase {
    /// Option 37 carrying `uri`, NUL-padded to a multiple of 8 bytes.
    static func option(_ uri: String) -> [UInt8] {
        var bytes: [UInt8] = [RouterOption.captivePortalType, 0] + Array(uri.utf8)
        while bytes.count % 8 != 0 { bytes.append(0) }
        bytes[1] = UInt8(bytes.count / 8)
        return bytes
    }

    func testTheURIIsReadWithoutItsPadding() {
        let uri = "https://portal.example/api"
        XCTAssertEqual(RouterOption.parse(Self.option(uri)).options, [.captivePortal(uri)])
        XCTAssertEqual(
            RouterOption.parse(Self.option("urn:ietf:params:capport:unrestricted")).options,
            [.captivePortal("urn:ietf:params:capport:unrestricted")])
        // Beside a PREF64 option, in one message.
        let both = RouterOptionTests.pref64(lifetime: 600, code: 0) + Self.option(uri)
        XCTAssertEqual(
            RouterOption.parse(both).options,
            [.pref64(RouterOptionTests.prefix96, lifetimeSeconds: 600), .captivePortal(uri)])
    }

    func testAURIThatIsEmptyTooLongOrNotPrintableIsNotTaken() {
        for bad in [
            [RouterOption.captivePortalType, 1, 0, 0, 0, 0, 0, 0],
            Self.option("https://portal.example/a b"),
            Self.option("https://portal.example/\u{7f}"),
            Self.option("https://p.example/" + String(repeating: "a", count: 1020)),
        ] {
            let parsed = RouterOption.parse(bad)
            XCTAssertEqual(parsed.options, [], "\(bad.prefix(24))")
            XCTAssertEqual(parsed.malformed.count, 1)
            XCTAssertTrue(parsed.malformed[0].hasPrefix("captive portal: "), parsed.malformed[0])
        }
        var highBit = Self.option("https://portal.example/x")
        highBit[10] = 0xC3
        XCTAssertEqual(RouterOption.parse(highBit).options, [])
    }

    func testAnAnnouncementIsTheInterfacesUntilReplacedOrTheLinkGoesDown() {
        var (core, _) = Nat64TableTests.makeCore()
        XCTAssertEqual(core.portalAPIs, [:])
        core.receive(
            [
                .routerOptions(
                    index: 2, options: Self.option("https://portal.example/api"), source: Nat64TableTests.router)
            ], malformed: 0, now: 0)
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://portal.example/api"])
        XCTAssertTrue(core.takeOutputs().contains(.portalAPIsChanged))
        // The same again: nothing to say.
        core.receive(
            [
                .routerOptions(
                    index: 2, options: Self.option("https://portal.example/api"), source: Nat64TableTests.router)
            ], malformed: 0, now: 1)
        XCTAssertFalse(core.takeOutputs().contains(.portalAPIsChanged))
        core.receive(
            [
                .routerOptions(
                    index: 2, options: Self.option("https://other.example/api"), source: Nat64TableTests.router)
            ], malformed: 0, now: 2)
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://other.example/api"])
        XCTAssertTrue(core.takeOutputs().contains(.portalAPIsChanged))
        // Down: gone.
        core.receive([.newLink(Link(index: 2, name: "eth0", flags: 0, type: 1))], malformed: 0, now: 3)
        XCTAssertEqual(core.portalAPIs, [:])
        XCTAssertTrue(core.takeOutputs().contains(.portalAPIsChanged))
        let up = KernelNumbers.linkUp | KernelNumbers.linkRunning | KernelNumbers.linkLowerUp
        core.receive(
            [
                .newLink(Link(index: 2, name: "eth0", flags: up, type: 1)),
                .routerOptions(
                    index: 2, options: Self.option("https://portal.example/api"), source: Nat64TableTests.router),
            ], malformed: 0, now: 4)
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://portal.example/api"])
        core.receive([.deleteLink(index: 2)], malformed: 0, now: 5)
        XCTAssertEqual(core.portalAPIs, [:])
    }

    func testAnnouncementsForUnknownInterfacesAreNotKept() {
        var (core, _) = Nat64TableTests.makeCore()
        for index in 0..<500 {
            core.receive(
                [.routerOptions(index: Int32(100 + index), options: Self.option("https://p\(index).example/"))],
                malformed: 0, now: UInt64(index) * ns)
            core.receive(
                [
                    .routerOptions(
                        index: 2, options: Self.option("https://p\(index).example/"), source: Nat64TableTests.router)
                ], malformed: 0, now: UInt64(index) * ns)
        }
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://p499.example/"])
    }
}
