import MonitorRules
import NetAddress
import ProbeRules
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// The service's core above its targets: announcements merged and followed, link facts for every target,
/// sleeps announced or found from the boot clock; and its driver, which decides nothing.
final class ServiceCoreTests: XCTestCase {
    let api = "https://api.test/capport"

    let eth0 = LinkID(index: 2, generation: 1)
    let wlan0 = LinkID(index: 3, generation: 2)

    /// A verdict of a path routed over `interface` (index `index`).
    func verdict(_ interface: String, _ index: Int32) -> ReachabilityVerdict {
        var verdict = ReachabilityVerdict(usable: true, interface: interface, kind: .ethernet)
        verdict.interfaceIndex = index
        return verdict
    }

    /// A core with the kernel's eth0 (2) and wlan0 (3).
    func coreWithLinks() -> ServiceCore {
        var core = ServiceCore()
        XCTAssertEqual(core.handle(.kernelLinks([2: "eth0", 3: "wlan0"]), now: 0, slept: 0), [])
        XCTAssertEqual(core.links.keys.sorted(), [eth0, wlan0])
        return core
    }

    func testARoutersAnnouncementGoesBeforeDHCPsAndTheAnswerReachesTheTargetsOnTheLink() throws {
        var core = coreWithLinks()
        let path = ServiceCore.PathKey(target: 0, family: .v4)
        _ = core.handle(.routed(target: 0, family: .v4, verdict("eth0", 2)), now: 0, slept: 0)
        let dhcp = LinkFactsTable(["eth0": LinkFacts(dhcpPortalAPI: "https://dhcp.test/api")])
        var actions = core.handle(.servicesSaid(dhcp), now: 0, slept: 0)
        XCTAssertTrue(
            actions.contains(
                .fetchPortalAPI(
                    link: eth0, interface: "eth0", uri: "https://dhcp.test/api", generation: 1, limit: 5 * second)),
            "\(actions)")
        // The services' word reaches the path routed over the link.
        XCTAssertEqual(actions.last, .link(path, eth0, core.links[eth0]?.view))
        actions = core.handle(.routersAnnounced(["eth0": api]), now: 11 * second, slept: 0)
        XCTAssertTrue(actions.contains(.cancelPortalAPIFetch(link: eth0)) || actions.contains { $0.isFetch })
        guard case .fetchPortalAPI(_, _, let uri, let generation, _) = actions.first(where: \.isFetch) else {
            return XCTFail("the router's announcement is asked: \(actions)")
        }
        XCTAssertEqual(uri, api, "the router's word is the fresher")
        actions = core.handle(
            .portalAPIFetched(link: eth0, generation: generation, .success(CapportAnswer(captive: true))),
            now: 11 * second, slept: 0)
        XCTAssertEqual(core.portalAPIAnswer(on: "eth0")?.captive, true)
        guard case .link(path, eth0, let view?) = actions.last else { return XCTFail("no view in \(actions)") }
        XCTAssertEqual(view.facts.portalAPI?.answer?.captive, true)
        XCTAssertEqual(view.facts.dhcpPortalAPI, "https://dhcp.test/api", "the services' facts stay")
        // The same announcement again changes nothing, so nothing is said.
        XCTAssertEqual(core.handle(.routersAnnounced(["eth0": api]), now: 12 * second, slept: 0), [])
        // While captive, it is asked again in 2 s.
        XCTAssertEqual(core.nextWakeup, 11 * second + CapportFollower.captiveRefresh)
    }

    func testAStaleFetchesAnswerChangesNothing() {
        var core = coreWithLinks()
        _ = core.handle(.routed(target: 0, family: .v4, verdict("eth0", 2)), now: 0, slept: 0)
        _ = core.handle(.routersAnnounced(["eth0": api]), now: 0, slept: 0)
        XCTAssertTrue(core.isFetching(link: eth0, generation: 1))
        let stale = core.handle(
            .portalAPIFetched(link: eth0, generation: 7, .success(CapportAnswer(captive: true))),
            now: 10 * ms, slept: 0)
        XCTAssertEqual(stale, [])
        XCTAssertNil(core.portalAPIAnswer(on: "eth0"))
        // Nor does an answer for a link that is gone, or another link's.
        XCTAssertEqual(
            core.handle(
                .portalAPIFetched(link: wlan0, generation: 1, .success(CapportAnswer(captive: true))), now: 10 * ms,
                slept: 0), [])
    }

    /// The floor's rule: a link's fact reaches exactly the paths routed over it, with the verdict that routes
    /// them there, and no other target hears of it.
    func testALinksFactReachesExactlyThePathsRoutedOverIt() {
        var core = coreWithLinks()
        let onEth0 = ServiceCore.PathKey(target: 0, family: .v4)
        let onWlan0 = ServiceCore.PathKey(target: 1, family: .v4)
        let alsoEth0 = ServiceCore.PathKey(target: 1, family: .v6)
        XCTAssertEqual(
            core.handle(.routed(target: 0, family: .v4, verdict("eth0", 2)), now: 0, slept: 0),
            [.route(onEth0, verdict("eth0", 2), link: LinkView(id: eth0, name: "eth0"))])
        _ = core.handle(.routed(target: 1, family: .v4, verdict("wlan0", 3)), now: 0, slept: 0)
        _ = core.handle(.routed(target: 1, family: .v6, verdict("eth0", 2)), now: 0, slept: 0)
        let metered = LinkFactsTable(["wlan0": LinkFacts(meteredByNetworkManager: true)])
        let actions = core.handle(.servicesSaid(metered), now: 1 * second, slept: 0)
        XCTAssertEqual(actions, [.link(onWlan0, wlan0, core.links[wlan0]?.view)])
        XCTAssertEqual(core.links[wlan0]?.view.facts.meteredByNetworkManager, true)
        // A route that moves takes the new link's view with it; the old link's news no longer reach it.
        guard
            case .route(onEth0, _, let moved?) = core.handle(
                .routed(target: 0, family: .v4, verdict("wlan0", 3)), now: 2 * second, slept: 0
            ).first
        else { return XCTFail() }
        XCTAssertEqual(moved.id, wlan0)
        XCTAssertTrue(moved.facts.meteredByNetworkManager)
        let eth0News = core.handle(
            .servicesSaid(
                LinkFactsTable(["eth0": LinkFacts(isModem: true), "wlan0": LinkFacts(meteredByNetworkManager: true)])),
            now: 3 * second, slept: 0)
        XCTAssertEqual(eth0News, [.link(alsoEth0, eth0, core.links[eth0]?.view)])
        // A verdict naming no link (the route gone) keeps the path on its link: its portal is kept meanwhile.
        _ = core.handle(
            .routed(target: 1, family: .v6, ReachabilityVerdict(usable: false, reason: "no route")), now: 4 * second,
            slept: 0)
        XCTAssertEqual(core.routes[alsoEth0], eth0)
        // A target gone hears nothing more: of the two links changed, only target 0's hears.
        _ = core.handle(.targetGone(1), now: 5 * second, slept: 0)
        XCTAssertEqual(
            core.handle(.servicesSaid(LinkFactsTable()), now: 6 * second, slept: 0),
            [.link(onEth0, wlan0, LinkView(id: wlan0, name: "wlan0"))])
    }

    /// The NAT64 prefix is its link's: the routers' word on one link reaches the paths routed over it and no other,
    /// and a link that appears later starts with its routers' word.
    func testALinksNat64PrefixReachesThePathsRoutedOverItAndNoOther() {
        var core = coreWithLinks()
        let onEth0 = ServiceCore.PathKey(target: 0, family: .v6)
        _ = core.handle(.routed(target: 0, family: .v6, verdict("eth0", 2)), now: 0, slept: 0)
        _ = core.handle(.routed(target: 1, family: .v6, verdict("wlan0", 3)), now: 0, slept: 0)
        let prefix = Nat64Prefix(
            prefix: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 0x64] + [UInt8](repeating: 0, count: 10)), length: 96)
        let actions = core.handle(.routersAdvertised(nat64Prefixes: [2: prefix]), now: 1 * second, slept: 0)
        XCTAssertEqual(actions, [.link(onEth0, eth0, LinkView(id: eth0, name: "eth0", nat64Prefix: prefix))])
        XCTAssertEqual(core.handle(.routersAdvertised(nat64Prefixes: [2: prefix]), now: 2 * second, slept: 0), [])
        _ = core.handle(.kernelLinks([2: "eth0", 3: "wlan0", 4: "wwan0"]), now: 3 * second, slept: 0)
        _ = core.handle(.routersAdvertised(nat64Prefixes: [2: prefix, 4: prefix]), now: 3 * second, slept: 0)
        _ = core.handle(.kernelLinks([2: "eth0", 3: "wlan0"]), now: 4 * second, slept: 0)
        _ = core.handle(.kernelLinks([2: "eth0", 3: "wlan0", 4: "wwan0"]), now: 5 * second, slept: 0)
        let wwan0 = try? XCTUnwrap(core.links.keys.first { $0.index == 4 })
        XCTAssertEqual(wwan0.flatMap { core.links[$0]?.view.nat64Prefix }, prefix, "a new link takes its routers' word")
        XCTAssertEqual(
            core.handle(.routersAdvertised(nat64Prefixes: [4: prefix]), now: 6 * second, slept: 0),
            [.link(onEth0, eth0, LinkView(id: eth0, name: "eth0"))], "withdrawn on eth0: its path hears it")
    }

    /// A link is its index and a generation: a deleted link's index given again is a new link, which starts
    /// afresh; the paths on the old one hear it is gone.
    func testAReusedIndexIsANewLink() {
        var core = coreWithLinks()
        let path = ServiceCore.PathKey(target: 0, family: .v4)
        _ = core.handle(.routed(target: 0, family: .v4, verdict("eth0", 2)), now: 0, slept: 0)
        _ = core.handle(.routersAnnounced(["eth0": api]), now: 0, slept: 0)
        XCTAssertTrue(core.isFetching(link: eth0, generation: 1))
        XCTAssertEqual(
            core.handle(.kernelLinks([3: "wlan0"]), now: 1 * second, slept: 0),
            [.cancelPortalAPIFetch(link: eth0), .link(path, eth0, nil)])
        let actions = core.handle(.kernelLinks([2: "eth0", 3: "wlan0"]), now: 2 * second, slept: 0)
        let again = LinkID(index: 2, generation: 3)
        XCTAssertEqual(core.links.keys.sorted(), [again, wlan0])
        XCTAssertTrue(
            actions.contains { if case .fetchPortalAPI(again, "eth0", api, _, _) = $0 { true } else { false } })
        XCTAssertNil(core.routes[path], "routed over the old link, not the new one")
        // A rename is the same link under another name: what is said of the new name is its.
        _ = core.handle(.routed(target: 0, family: .v4, verdict("eth0", 2)), now: 3 * second, slept: 0)
        _ = core.handle(
            .servicesSaid(LinkFactsTable(["lan": LinkFacts(meteredByNetworkManager: true)])), now: 4 * second, slept: 0)
        let renamed = core.handle(.kernelLinks([2: "lan", 3: "wlan0"]), now: 5 * second, slept: 0)
        guard case .link(path, again, let view?) = renamed.last else { return XCTFail("\(renamed)") }
        XCTAssertEqual(view.name, "lan")
        XCTAssertTrue(view.facts.meteredByNetworkManager)
    }

    /// A portal API's fetch ends within max(5 s, Timeout) of the targets routed over its link (of every target
    /// while none is): the service's setting, not the default target's.
    func testAFetchEndsWithinTheLongestTimeoutOfItsLinksTargets() {
        var core = coreWithLinks()
        _ = core.handle(.targetTimeout(target: 0, 8 * second), now: 0, slept: 0)
        _ = core.handle(.targetTimeout(target: 1, 12 * second), now: 0, slept: 0)
        _ = core.handle(.routed(target: 0, family: .v4, verdict("eth0", 2)), now: 0, slept: 0)
        _ = core.handle(.routed(target: 1, family: .v4, verdict("wlan0", 3)), now: 0, slept: 0)
        let actions = core.handle(.routersAnnounced(["eth0": api, "wlan0": api]), now: 0, slept: 0)
        let limits = actions.compactMap { action -> Duration? in
            if case .fetchPortalAPI(_, _, _, _, let limit) = action { limit } else { nil }
        }
        XCTAssertEqual(limits, [8 * second, 12 * second])
        var alone = coreWithLinks()
        _ = alone.handle(.targetTimeout(target: 0, 1 * second), now: 0, slept: 0)
        guard
            case .fetchPortalAPI(_, _, _, _, let limit)? = alone.handle(
                .routersAnnounced(["eth0": api]), now: 0, slept: 0
            ).first(where: \.isFetch)
        else { return XCTFail() }
        XCTAssertEqual(limit, 5 * second, "never below 5 s")
    }

    /// A next hop's check is the link's: paths over the same link share it, a path over another link asks its own, and
    /// a link going ends its checks. A link the route core has not said yet shares its checks all the same.
    func testPathsOverOneLinkShareTheirNextHopsCheckAndOnlyThose() {
        var core = coreWithLinks()
        let gateway = IPAddress.v4([198, 18, 2, 254])
        func ask(_ target: Int, _ index: Int32, at time: Instant = 0) -> [ServiceCore.Action] {
            core.handle(
                .neighborAsked(
                    ServiceCore.PathKey(target: target, family: .v4), gateway: gateway, interfaceIndex: index,
                    source: "198.18.2.1", generation: 5, routine: false),
                now: time, slept: 0)
        }
        XCTAssertEqual(
            ask(0, 2),
            [.checkNeighbor(link: eth0, interfaceIndex: 2, gateway: gateway, source: "198.18.2.1", number: 1)])
        XCTAssertEqual(ask(1, 2), [], "target 1 joins target 0's check on eth0")
        XCTAssertEqual(
            ask(2, 3),
            [.checkNeighbor(link: wlan0, interfaceIndex: 3, gateway: gateway, source: "198.18.2.1", number: 1)],
            "the same address on wlan0 is another next hop")
        let answered = core.handle(
            .neighborChecked(link: eth0, gateway: gateway, number: 1, .unreachable), now: 600 * ms, slept: 0)
        XCTAssertEqual(
            answered,
            [
                .log("eth0: neighbour check of gateway 198.18.2.254: unreachable"),
                .neighborAnswered(
                    ServiceCore.PathKey(target: 0, family: .v4), generation: 5, .unreachable, checkedAt: .origin),
                .neighborAnswered(
                    ServiceCore.PathKey(target: 1, family: .v4), generation: 5, .unreachable, checkedAt: .origin),
            ], "exactly the paths that asked on eth0 hear it")
        // Target 2 moves to eth0: its wlan0 check, which nobody else waits for, goes.
        XCTAssertEqual(
            ask(2, 2, at: 1 * second),
            [
                .cancelNeighborCheck(link: wlan0, gateway: gateway, number: 1),
                .checkNeighbor(link: eth0, interfaceIndex: 2, gateway: gateway, source: "198.18.2.1", number: 2),
            ])
        XCTAssertEqual(
            core.handle(.kernelLinks([3: "wlan0"]), now: 1 * second, slept: 0).first,
            .cancelNeighborCheck(link: eth0, gateway: gateway, number: 2), "eth0 is gone, and its check with it")
        let unsaid = LinkID(index: 9, generation: 0)
        XCTAssertEqual(
            ask(0, 9, at: 2 * second),
            [.checkNeighbor(link: unsaid, interfaceIndex: 9, gateway: gateway, source: "198.18.2.1", number: 1)])
        XCTAssertEqual(ask(1, 9, at: 2 * second), [], "a link not said yet shares its checks too")
        XCTAssertEqual(
            core.handle(.targetGone(0), now: 2 * second, slept: 0), [], "target 1 still waits for it")
        XCTAssertEqual(
            core.handle(.targetGone(1), now: 2 * second, slept: 0),
            [.cancelNeighborCheck(link: unsaid, gateway: gateway, number: 1)])
    }

    func testAnAnnouncedSleepSuspendsWritesAndAbsorbsTheTimeAsleep() {
        var core = ServiceCore()
        XCTAssertEqual(core.handle(.tick, now: 10 * second, slept: 0), [.writeHistories])
        XCTAssertEqual(core.handle(.sleepAnnounced(true), now: 11 * second, slept: 0), [.sleep(true), .writeHistories])
        XCTAssertEqual(core.handle(.sleepAnnounced(true), now: 11 * second, slept: 0), [], "said once")
        XCTAssertTrue(core.asleep)
        // Asleep, the boot clock's lead grows; nothing is a jump then, nor once logind says the machine woke.
        XCTAssertEqual(core.handle(.targetWakes, now: 11 * second, slept: 3_600 * second), [])
        XCTAssertEqual(core.handle(.sleepAnnounced(false), now: 11 * second, slept: 3_600 * second), [.sleep(false)])
        XCTAssertEqual(core.handle(.targetWakes, now: 12 * second, slept: 3_600 * second), [])
    }

    func testABootClockJumpOverASecondIsASleepFoundBeforeAnyTargetWakes() {
        var core = ServiceCore()
        XCTAssertEqual(
            core.handle(.targetWakes, now: 1 * second, slept: 5 * second), [], "the first reading is the base")
        XCTAssertEqual(
            core.handle(.targetWakes, now: 2 * second, slept: 5 * second + 900 * ms), [], "0.9 s is no sleep")
        XCTAssertEqual(
            core.handle(.targetWakes, now: 3 * second, slept: 7 * second + 400 * ms),
            [.log("the machine slept for 1 s (CLOCK_BOOTTIME jumped)"), .slept(1_500 * ms)])
        XCTAssertEqual(core.handle(.targetWakes, now: 4 * second, slept: 7 * second + 400 * ms), [], "found once")
        XCTAssertEqual(
            core.handle(.tick, now: 10 * second, slept: 67 * second + 400 * ms),
            [.log("the machine slept for 60 s (CLOCK_BOOTTIME jumped)"), .slept(60 * second), .writeHistories])
    }

    /// The first verdicts wait for ModemManager's and NetworkManager's first view, at most a second.
    func testTheFirstVerdictsWaitForTheServicesAtMostASecond() {
        var core = ServiceCore()
        XCTAssertEqual(core.handle(.servicesFollowed(ready: true), now: 0, slept: 0), [], "ready: nothing waits")
        XCTAssertNil(core.nextWakeup)
        XCTAssertEqual(core.handle(.servicesFollowed(ready: false), now: 0, slept: 0), [.holdFirstVerdicts(true)])
        XCTAssertEqual(core.nextWakeup, .origin + ServiceCore.servicesWait)
        XCTAssertEqual(core.handle(.timeout, now: 500 * ms, slept: 0), [], "not yet")
        XCTAssertEqual(core.handle(.servicesReady, now: 600 * ms, slept: 0), [.holdFirstVerdicts(false)])
        XCTAssertNil(core.nextWakeup)
        XCTAssertEqual(core.handle(.servicesReady, now: 700 * ms, slept: 0), [], "let go once")

        var late = ServiceCore()
        _ = late.handle(.servicesFollowed(ready: false), now: 0, slept: 0)
        XCTAssertEqual(late.handle(.timeout, now: 1 * second, slept: 0), [.holdFirstVerdicts(false)])
        XCTAssertEqual(late.handle(.servicesReady, now: 2 * second, slept: 0), [])
    }

    /// The floor's rule: one wake-up for the whole set. The service's driver keeps the earliest deadline of its core
    /// and of every target it adopted; when it comes, a sleep nobody announced is looked for first (once), then each
    /// target whose deadline came is woken, in the order of their numbers; the others are not.
    func testOneWakeUpForTheWholeSetAndTheSleepLookedForFirst() {
        let world = RecordingWorld()
        let driver = ServiceDriver(world: world)
        world.driver = driver
        driver.handle(.tick) // the boot clock's first reading: no sleep so far
        let targetWorlds = [TargetDriverTests.RecordingWorld(), TargetDriverTests.RecordingWorld()]
        // Target 0's probe waits 800 ms for its answer, target 1's 200 ms: the one wake-up is target 1's.
        let targets = zip([800, 200] as [UInt32], targetWorlds).map { timeout, targetWorld in
            TargetDriver(
                core: TargetCore(
                    host: "198.18.0.2", family: .ipv4,
                    probeSettings: ProbeSettings(intervalMilliseconds: 5000, timeoutMilliseconds: timeout), seed: 7),
                world: targetWorld)
        }
        for (number, target) in targets.enumerated().reversed() { driver.adopt(target, number: number) }
        world.onWakeTarget = { number in
            targetWorlds[number].now = world.now
            targets[number].handle(.timeout)
        }
        var route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.9")
        route.routedFamilies = [.v4]
        for target in targets {
            target.handle(.start(checkURL: ""))
            target.handle(.path(.v4, .route(route)))
        }
        XCTAssertEqual(targets[0].core.nextWakeup, 800 * ms)
        XCTAssertEqual(targets[1].core.nextWakeup, 200 * ms)
        XCTAssertEqual(driver.nextWakeup, 200 * ms)
        world.calls = []
        world.nowValue = 200 * ms
        world.sleptNow = 5 * second
        driver.wake()
        XCTAssertEqual(
            world.calls.filter { !$0.hasPrefix("writeHistories") },
            ["log the machine slept for 5 s (CLOCK_BOOTTIME jumped)", "slept 5000 ms", "wake 1"],
            "the sleep is looked for before the one target whose deadline came, and only it, is woken")
        XCTAssertEqual(world.wakeUps.last, driver.nextWakeup, "the world keeps one wake-up, re-armed")
        world.calls = []
        world.nowValue = 800 * ms
        driver.wake()
        XCTAssertEqual(world.calls, ["wake 0"])
        // Targets gone no longer count.
        driver.release(number: 0)
        driver.release(number: 1)
        XCTAssertEqual(driver.nextWakeup, driver.core.nextWakeup)
    }

    /// Every action is one world call, in order, and an event handed in meanwhile waits for them.
    func testTheDriverCarriesOutEachActionAsOneWorldCallAndIsNeverReentered() {
        let world = RecordingWorld()
        let driver = ServiceDriver(world: world)
        world.driver = driver
        var steps: [[ServiceCore.Action]] = []
        driver.observeStep = { steps.append($0) }
        world.sleptNow = 0
        driver.handle(.kernelLinks([2: "eth0"]))
        driver.handle(.routed(target: 0, family: .v4, verdict("eth0", 2)))
        driver.handle(.routersAnnounced(["eth0": api]))
        world.sleptNow = 2 * second
        driver.handle(.targetWakes)
        driver.handle(.sleepAnnounced(true))
        XCTAssertEqual(world.calls, steps.flatMap { $0 }.map(RecordingWorld.call))
        XCTAssertEqual(world.calls.filter { $0.hasPrefix("fetch") }, ["fetch link 2.1 eth0 \(api) 1 5000 ms"])
        XCTAssertEqual(
            world.calls.suffix(4),
            ["log the machine slept for 2 s (CLOCK_BOOTTIME jumped)", "slept 2000 ms", "sleep true", "writeHistories"])
        XCTAssertTrue(world.reentered.isEmpty, "handed in while driving: \(world.reentered)")
        XCTAssertEqual(world.wakeUps.last, driver.core.nextWakeup)
        // The fetch the world answered while its link call ran was handed to the core after that step.
        XCTAssertTrue(world.answeredInside)
        XCTAssertEqual(driver.core.portalAPIAnswer(on: "eth0")?.captive, false)
    }
}

extension ServiceCore.Action {
    var isFetch: Bool { if case .fetchPortalAPI = self { true } else { false } }
}

/// A world that writes down every call, and answers the first fetch from inside a later call, as a daemon's
/// world whose callback runs at once would.
private final class RecordingWorld: ServiceWorld {
    weak var driver: ServiceDriver?
    var calls: [String] = []
    var wakeUps: [Instant?] = []
    var sleptNow: Duration = 0
    var reentered: [String] = []
    var answeredInside = false
    private var inside = false
    private var fetched: (LinkID, UInt64)?

    var nowValue = Instant.origin
    var now: Instant { nowValue }
    var slept: Duration { sleptNow }

    static func call(_ action: ServiceCore.Action) -> String {
        switch action {
        case .fetchPortalAPI(let link, let interface, let uri, let generation, let limit):
            "fetch \(link) \(interface) \(uri) \(generation) \(limit.milliseconds) ms"
        case .cancelPortalAPIFetch(let link): "cancel \(link)"
        case .checkNeighbor(let link, _, let gateway, _, let number): "check \(link) \(gateway) \(number)"
        case .cancelNeighborCheck(let link, let gateway, let number): "uncheck \(link) \(gateway) \(number)"
        case .neighborAnswered(let path, let generation, let answer, _):
            "neighbor \(path.target) \(path.family) \(generation) \(answer)"
        case .log(let line): "log \(line)"
        case .route(let path, _, let link): "route \(path.target) \(path.family) \(link?.name ?? "-")"
        case .link(let path, let id, _): "link \(path.target) \(path.family) \(id)"
        case .sleep(let asleep): "sleep \(asleep)"
        case .slept(let jump): "slept \(jump.milliseconds) ms"
        case .writeHistories: "writeHistories"
        case .holdFirstVerdicts(let hold): "hold \(hold)"
        }
    }

    private func record(_ call: String) {
        if inside { reentered.append(call) }
        calls.append(call)
    }

    func fetchPortalAPI(link: LinkID, interface: String, uri: String, generation: UInt64, limit: Duration) {
        record("fetch \(link) \(interface) \(uri) \(generation) \(limit.milliseconds) ms")
        fetched = (link, generation)
    }
    func cancelPortalAPIFetch(link: LinkID) { record("cancel \(link)") }
    func checkNeighbor(link: LinkID, interfaceIndex: Int32, gateway: IPAddress, source: String, number: UInt64) {
        record("check \(link) \(gateway) \(number)")
    }
    func cancelNeighborCheck(link: LinkID, gateway: IPAddress, number: UInt64) {
        record("uncheck \(link) \(gateway) \(number)")
    }
    func neighborAnswered(
        _ path: ServiceCore.PathKey, generation: UInt64, _ answer: NeighborAnswer, checkedAt: Instant
    ) {
        record("neighbor \(path.target) \(path.family) \(generation) \(answer)")
    }
    func log(_ line: String) { record("log \(line)") }
    func route(_ path: ServiceCore.PathKey, _ verdict: ReachabilityVerdict, link: LinkView?) {
        record("route \(path.target) \(path.family) \(link?.name ?? "-")")
    }
    func linkChanged(_ path: ServiceCore.PathKey, _ id: LinkID, _ view: LinkView?) {
        record("link \(path.target) \(path.family) \(id)")
        guard let (link, generation) = fetched else { return }
        fetched = nil
        // Handed in while the driver carries out a step: it must wait, not run inside this call.
        inside = true
        driver?.handle(.portalAPIFetched(link: link, generation: generation, .success(CapportAnswer(captive: false))))
        inside = false
        answeredInside = true
    }
    func machineSleeps(_ asleep: Bool) { record("sleep \(asleep)") }
    func machineSlept(_ jump: Duration) { record("slept \(jump.milliseconds) ms") }
    func writeHistories() { record("writeHistories") }
    func holdFirstVerdicts(_ hold: Bool) { record("hold \(hold)") }
    /// What waking a target does besides (nil: nothing).
    var onWakeTarget: ((Int) -> Void)?
    func wakeTarget(_ number: Int) {
        record("wake \(number)")
        onWakeTarget?(number)
    }
    func wakeUp(at deadline: Instant?) { wakeUps.append(deadline) }
}
