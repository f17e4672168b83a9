import NetAddress
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// Issue 45 N20–N22: options 37 and 38 were taken from any host on the link, never expired, and a prefix pointing
/// on-link was used. Only a router of that interface is heard — the gateway of an IPv6 default route there, or
/// the same card by the kernel's neighbour table — its word ends with its route, and implausible prefixes are refused.
final class RouterSourceTests: XCTestCase {
    let router = Nat64TableTests.router
    let routerGlobal = IPAddress.v6([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 9) + [1])
    let stranger = IPAddress.v6([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [0x66])
    let portal = PortalAnnouncementTests.option("https://portal.example/api")
    func pref64(_ lifetime: UInt16) -> [UInt8] { RouterOptionTests.pref64(lifetime: lifetime, code: 0) }

    func testOnlyTheGatewayOfADefaultRouteOnThatInterfaceIsHeard() {
        var (core, target) = Nat64TableTests.makeCore()
        core.receive(
            [
                .routerOptions(index: 2, options: pref64(600), source: stranger),
                .routerOptions(index: 2, options: portal, source: stranger),
                .routerOptions(index: 2, options: pref64(600)),
            ], malformed: 0, now: 0)
        XCTAssertNil(core.advertisedPrefix(target), "another host on the link")
        XCTAssertEqual(core.portalAPIs, [:])
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 1, "no source: no router can be told")
        // Held for a route through it (issue 54 item 1); none comes.
        core.handleTimeout(now: 10 * second)
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 2)
        XCTAssertTrue(
            core.takeOutputs().contains {
                if case .ignoredRouterOption(let why) = $0 { why.contains("not a router") } else { false }
            })
        core.receive(
            [
                .routerOptions(index: 2, options: pref64(600), source: router),
                .routerOptions(index: 2, options: portal, source: router),
            ], malformed: 0, now: 11 * second)
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://portal.example/api"])
    }

    /// A default route set through the router's global address, the advertisements from its link-local one: the
    /// kernel's neighbour table says they are one card; a stranger's card is not the router's.
    func testTheRoutersLinkLocalAddressIsHeardWhenItIsTheGatewaysCard() {
        let cards: [IPAddress: [UInt8]] = [
            routerGlobal: [2, 0, 0, 0, 0, 1], router: [2, 0, 0, 0, 0, 1], stranger: [2, 0, 0, 0, 0, 0x66],
        ]
        var core = ReachabilityCore(
            classify: { _ in .ethernet }, linkLayerAddress: { address, index in index == 2 ? cards[address] : nil })
        let target = core.addTarget(families: [.v6])
        Self.start(&core, gateway: routerGlobal)
        core.receive([.routerOptions(index: 2, options: pref64(600), source: stranger)], malformed: 0, now: 0)
        XCTAssertNil(core.advertisedPrefix(target))
        core.receive([.routerOptions(index: 2, options: pref64(600), source: router)], malformed: 0, now: 1)
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
    }

    func testAnAnnouncementEndsWithItsRoutersDefaultRoute() {
        var (core, target) = Nat64TableTests.makeCore()
        core.receive([.routerOptions(index: 2, options: pref64(1800) + portal, source: router)], malformed: 0, now: 0)
        XCTAssertNotNil(core.advertisedPrefix(target))
        _ = core.takeOutputs()
        core.receive(
            [.deleteRoute(Route(family: 10, outputInterface: 2, gateway: router))], malformed: 0, now: 1 * second)
        core.evaluate()
        XCTAssertNotNil(core.nat64[2], "a route replaced (deleted, then added) keeps its router's word")
        core.handleTimeout(now: 3 * second)
        XCTAssertNil(core.advertisedPrefix(target), "the advertising router's default route has been gone 2 s")
        XCTAssertEqual(core.portalAPIs, [:])
        XCTAssertTrue(core.takeOutputs().contains(.portalAPIsChanged))
    }

    func testAPrefixNoNAT64CanHaveIsRefused() {
        func bytes(_ head: [UInt8]) -> [UInt8] { Array((head + [UInt8](repeating: 0, count: 12)).prefix(12)) }
        let refused: [[UInt8]] = [
            bytes([]), // ::/96: unspecified, IPv4-compatible
            bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]), // ::ffff:0:0/96: IPv4-mapped
            bytes([0xfe, 0x80]), // link-local
            bytes([0xff, 0x02]), // multicast
            bytes([0x20, 0x01, 0x0d, 0xb8, 0, 1]), // 2001:db8:1::/96, inside eth0's own 2001:db8:1::/64
        ]
        for head in refused {
            var (core, target) = Nat64TableTests.makeCore()
            core.receive(
                [
                    .routerOptions(
                        index: 2, options: RouterOptionTests.pref64(lifetime: 600, code: 0, prefix: head),
                        source: router)
                ],
                malformed: 0, now: 0)
            XCTAssertNil(core.advertisedPrefix(target), "\(head)")
            XCTAssertEqual(core.statistics.ignoredRouterOptions, 1, "\(head)")
        }
        // From DNS too (RFC 7050): ipv4only.arpa answered under an IPv4-mapped or link-local prefix is no prefix.
        XCTAssertNil(Nat64Prefix.discovered(in: [.v6([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 0, 170])]))
        XCTAssertNil(Nat64Prefix.discovered(in: [.v6([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 0, 170])]))
        XCTAssertNotNil(
            Nat64Prefix.discovered(in: [.v6([0x20, 0x01, 0x0d, 0xb8, 0, 0x64, 0, 0, 0, 0, 0, 0, 192, 0, 0, 170])]))
    }

    /// A core whose eth0 (index 2) has 2001:db8:1::2/64 and an IPv6 default route through `gateway` (nil: none).
    static func start(_ core: inout ReachabilityCore, gateway: IPAddress?) {
        core.start()
        var asked = core.takeOutputs()
        while let next = asked.first {
            asked.removeFirst()
            guard case .send(.dump(_, let sequence)) = next else { continue }
            core.receive([.done(sequence: sequence)], malformed: 0, now: 0)
            asked += core.takeOutputs()
        }
        let up = KernelNumbers.linkUp | KernelNumbers.linkRunning | KernelNumbers.linkLowerUp
        core.receive(
            [
                .newLink(Link(index: 2, name: "eth0", flags: up, type: 1)),
                .newAddress(
                    InterfaceAddress(
                        index: 2, address: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 9) + [2]),
                        prefixLength: 64)),
            ] + (gateway.map { [.newRoute(Route(family: 10, outputInterface: 2, gateway: $0), sequence: 0)] } ?? []),
            malformed: 0, now: 0)
        core.evaluate()
        _ = core.takeOutputs()
    }
}
