import NetAddress
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// Issue 54 items 1–4 and 7 (INTERFACE.md "Which advertisements count"), as NetworkManager and networkd run a link:
/// `accept_ra` 0, the default route installed through the router's link-local address only after the manager has
/// read the advertisement that implies it, replaced by delete-and-add when the router's preference changes, two
/// routers merged into one multipath route.
final class WhichAdvertisementsCountTests: XCTestCase {
    static func linkLocal(_ last: UInt8) -> IPAddress { .v6([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [last]) }
    let router = linkLocal(1)
    let secondRouter = linkLocal(2)
    let stranger = linkLocal(0x66)
    let routerCard: [UInt8] = [2, 0, 0, 0, 0, 1]
    let portal = PortalAnnouncementTests.option("https://portal.example/api")
    func pref64(_ lifetime: UInt16) -> [UInt8] { RouterOptionTests.pref64(lifetime: lifetime, code: 0) }
    /// The Source Link-Layer Address option naming `card`.
    func sourceLinkLayer(_ card: [UInt8]) -> [UInt8] { [RouterOption.sourceLinkLayerType, 1] + card }

    func defaultRoute(through gateway: IPAddress, priority: UInt32 = 100) -> Route {
        Route(family: 10, outputInterface: 2, gateway: gateway, priority: priority)
    }

    /// A core with eth0 (index 2) up and addressed but no IPv6 default route yet, the kernel's neighbour table
    /// holding `cards`, and one IPv6 target without an address (the default route's verdict).
    func makeCore(cards: [IPAddress: [UInt8]] = [:]) -> (ReachabilityCore, ReachabilityCore.TargetID) {
        var core = ReachabilityCore(
            classify: { _ in .ethernet },
            linkLayerAddress: { address, index in index == 2 ? cards[.v6(address.bytes)] : nil })
        let target = core.addTarget(families: [.v6])
        RouterSourceTests.start(&core, gateway: nil)
        return (core, target)
    }

    func routeAdded(_ core: inout ReachabilityCore, _ route: Route, now: Instant) {
        core.receive([.newRoute(route, sequence: 0)], malformed: 0, now: now)
        core.evaluate()
    }

    func changed(_ outputs: [ReachabilityCore.Output]) -> (verdicts: Int, portals: Int) {
        (
            outputs.filter { if case .verdict = $0 { true } else { false } }.count,
            outputs.filter { $0 == .portalAPIsChanged }.count
        )
    }

    /// The kernel answers the dumps the core asks after an overrun: eth0 up, its default route through the router.
    func answerTheDumps(_ core: inout ReachabilityCore) {
        var asked = core.takeOutputs()
        while let next = asked.first {
            asked.removeFirst()
            guard case .send(.dump(let dump, let sequence)) = next else { continue }
            let up = KernelNumbers.linkUp | KernelNumbers.linkRunning | KernelNumbers.linkLowerUp
            switch dump {
            case .links:
                core.receive([.newLink(Link(index: 2, name: "eth0", flags: up, type: 1))], malformed: 0, now: 0)
            case .addresses: break
            case .routes:
                core.receive([.newRoute(defaultRoute(through: router), sequence: sequence)], malformed: 0, now: 1 * ms)
            }
            core.receive([.done(sequence: sequence)], malformed: 0, now: 1 * ms)
            asked += core.takeOutputs()
        }
    }

    /// Item 1: the answer to the solicitation comes before the route it implies; it counts once the route appears,
    /// at the route's event, with its lifetime counted from when it came.
    func testTheFirstAdvertisementCountsWhenItsRouteAppears() {
        var (core, target) = makeCore()
        // Its options in two advertisements (as one of radvd's and the answer to a solicitation may be): both count.
        core.receive([.routerOptions(index: 2, options: pref64(600), source: router)], malformed: 0, now: 1 * second)
        core.receive([.routerOptions(index: 2, options: portal, source: router)], malformed: 0, now: 1 * second)
        XCTAssertNil(core.advertisedPrefix(target), "not a router yet")
        XCTAssertEqual(core.portalAPIs, [:])
        XCTAssertEqual(core.nextWakeup, 11 * second, "held for 10 s")
        routeAdded(&core, defaultRoute(through: router), now: 1 * second + 40 * ms)
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://portal.example/api"], "published with the route")
        XCTAssertTrue(core.takeOutputs().contains(.portalAPIsChanged))
        core.evaluate()
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
        XCTAssertEqual(core.nat64[2]?.until, 601 * second, "the lifetime runs from the advertisement")
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 0)
    }

    /// Held 10 s, then forgotten with a line in the log: a route through the sender after that changes nothing.
    func testAnAdvertisementNoRouteCameForIsForgottenAfterTenSeconds() {
        var (core, target) = makeCore()
        core.receive([.routerOptions(index: 2, options: pref64(600), source: router)], malformed: 0, now: 0)
        core.handleTimeout(now: 9 * second)
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 0)
        core.handleTimeout(now: 10 * second)
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 1)
        XCTAssertTrue(
            core.takeOutputs().contains {
                if case .ignoredRouterOption(let why) = $0 { why.contains("not a router") } else { false }
            })
        XCTAssertNil(core.nextWakeup)
        routeAdded(&core, defaultRoute(through: router), now: 11 * second)
        XCTAssertNil(core.advertisedPrefix(target))
    }

    /// However many senders advertise before any route, at most a few advertisements are held per interface.
    func testHeldAdvertisementsAreBounded() {
        var (core, _) = makeCore()
        for sender in 0..<200 {
            core.receive(
                [.routerOptions(index: 2, options: pref64(600), source: Self.linkLocal(UInt8(sender)))], malformed: 0,
                now: UInt64(sender) * ms)
        }
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 196, "all but the last four displaced at once")
        routeAdded(&core, defaultRoute(through: Self.linkLocal(199)), now: 300 * ms)
        XCTAssertNotNil(core.nat64[2], "the newest are the ones kept")
    }

    /// Item 2: NetworkManager deletes and adds the route when the router's preference changes: nothing moves and
    /// nothing is emitted; a route gone for 2 s takes its router's word with it.
    func testARouteDeletedAndAddedAgainChangesNothing() {
        var (core, target) = makeCore()
        routeAdded(&core, defaultRoute(through: router), now: 0)
        core.receive(
            [.routerOptions(index: 2, options: pref64(1800) + portal, source: router)], malformed: 0, now: 1 * second)
        core.evaluate()
        XCTAssertNotNil(core.advertisedPrefix(target))
        _ = core.takeOutputs()
        core.receive([.deleteRoute(defaultRoute(through: router))], malformed: 0, now: 2 * second)
        core.evaluate()
        core.receive(
            [.newRoute(defaultRoute(through: router, priority: 20100), sequence: 0)], malformed: 0,
            now: 2 * second + 1 * ms)
        core.evaluate()
        core.handleTimeout(now: 10 * second)
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://portal.example/api"])
        XCTAssertEqual(changed(core.takeOutputs()).portals, 0)

        core.receive([.deleteRoute(defaultRoute(through: router, priority: 20100))], malformed: 0, now: 20 * second)
        core.evaluate()
        core.handleTimeout(now: 21 * second + 999 * ms)
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://portal.example/api"], "not yet 2 s")
        core.handleTimeout(now: 22 * second)
        XCTAssertEqual(core.portalAPIs, [:])
        XCTAssertTrue(core.nat64.isEmpty)
    }

    /// Item 3: two routers merged into one multipath default route (the parser gives a route per next hop): each is
    /// a router of the interface, and one leaving the route leaves the other's word.
    func testEachNextHopOfAMultipathRouteIsARouter() {
        var (core, target) = makeCore()
        routeAdded(&core, defaultRoute(through: router), now: 0)
        routeAdded(&core, defaultRoute(through: secondRouter), now: 0)
        core.receive([.routerOptions(index: 2, options: portal, source: router)], malformed: 0, now: 1 * second)
        core.receive(
            [.routerOptions(index: 2, options: pref64(600), source: secondRouter)], malformed: 0,
            now: 1 * second)
        core.evaluate()
        XCTAssertEqual(core.portalAPIs, ["eth0": "https://portal.example/api"])
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
        core.receive([.deleteRoute(defaultRoute(through: router))], malformed: 0, now: 2 * second)
        core.evaluate()
        core.handleTimeout(now: 5 * second)
        XCTAssertEqual(core.portalAPIs, [:], "the first router's word went with its next hop")
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96, "the second's stays")
    }

    /// Item 4 (N30) and item 7: where the route goes through the router's link-local address, the sender must be
    /// that address. A host naming the router's card in its option, and a second address of the router's own card
    /// (router lifetime 0, not the gateway), are no router — now, or once the kernel files the card for them.
    func testACardCountsOnlyForARouteThroughTheRoutersGlobalAddress() {
        let secondAddressOfTheRouter = Self.linkLocal(0x99)
        var (core, target) = makeCore(cards: [
            router: routerCard, stranger: routerCard, secondAddressOfTheRouter: routerCard,
        ])
        routeAdded(&core, defaultRoute(through: router), now: 0)
        core.receive(
            [
                .routerOptions(index: 2, options: sourceLinkLayer(routerCard) + pref64(600) + portal, source: stranger),
                .routerOptions(index: 2, options: pref64(600) + portal, source: stranger),
                .routerOptions(index: 2, options: pref64(600) + portal, source: secondAddressOfTheRouter),
            ], malformed: 0, now: 1 * second)
        core.evaluate()
        core.handleTimeout(now: 11 * second)
        XCTAssertNil(core.advertisedPrefix(target))
        XCTAssertEqual(core.portalAPIs, [:])
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 2, "one line per sender")

        // Through the router's global address (a route set by hand), its card stands for it.
        let global = IPAddress.v6([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 9) + [1])
        var (byHand, handTarget) = makeCore(cards: [global: routerCard, router: routerCard])
        routeAdded(&byHand, defaultRoute(through: global), now: 0)
        byHand.receive(
            [.routerOptions(index: 2, options: sourceLinkLayer(routerCard) + pref64(600), source: router)],
            malformed: 0, now: 1 * second)
        byHand.evaluate()
        XCTAssertEqual(byHand.advertisedPrefix(handTarget), RouterOptionTests.prefix96)
    }

    /// A redump (after an overrun) empties the table for a moment: the announcements stay unless the routes that
    /// came back lack their router for 2 s.
    func testAnOverrunKeepsTheAnnouncements() {
        var (core, target) = makeCore()
        routeAdded(&core, defaultRoute(through: router), now: 0)
        core.receive([.routerOptions(index: 2, options: pref64(600), source: router)], malformed: 0, now: 0)
        core.evaluate()
        core.overrun()
        answerTheDumps(&core)
        core.evaluate()
        core.handleTimeout(now: 5 * second)
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
    }

    /// An advertisement that comes while the table is being dumped again, before its link is back, is taken once the
    /// table is whole (it was ignored as "not known", and its prefix lost until the router spoke again).
    func testAnAdvertisementDuringARedumpIsTakenOnceTheTableIsWhole() {
        var (core, target) = makeCore()
        routeAdded(&core, defaultRoute(through: router), now: 0)
        core.overrun()
        core.receive([.routerOptions(index: 2, options: pref64(600), source: router)], malformed: 0, now: 0)
        answerTheDumps(&core)
        core.evaluate()
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 0)
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
    }
}
