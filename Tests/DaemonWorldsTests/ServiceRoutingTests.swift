import DaemonWorlds
import MonitorRules
import NetAddress
import Probe
import ProbeRules
import ReachabilityRules
import XCTest

/// A target's world decides nothing about links: a route verdict goes to the service's core as it came, and what
/// the target takes is what the core hands back (the verdict with its link's view, a link's news, the first
/// verdict's hold), so the same rules run in the daemon and in the simulation.
extension ConnectivityMonitorDriverTests {
    func testAVerdictReachesTheTargetOnlyThroughTheServiceWithItsLinksView() throws {
        let transport = FakeTransport(.answerAtOnce)
        let monitor = try startMonitor(transport)
        var toService: [(IPFamily, ReachabilityVerdict)] = []
        monitor.onRouteVerdict = { toService.append(($0, $1)) }
        routes.say(eth0)
        XCTAssertEqual(toService.map(\.0), [.v4])
        XCTAssertEqual(toService.first?.1, eth0)
        XCTAssertEqual(model.state.status, .unknown, "the world took nothing itself")
        // The service hands it back with the link's view: NetworkManager says eth0 is metered.
        let link = LinkID(index: 2, generation: 1)
        let metered = LinkView(id: link, name: "eth0", facts: LinkFacts(meteredByNetworkManager: true))
        monitor.routeDecided(.v4, eth0, link: metered)
        turn { model.state.status == .ethernet }
        XCTAssertTrue(model.state.metered)
        // A link's news reaches the path routed over it; another link's does not.
        let wlan0 = LinkID(index: 3, generation: 2)
        monitor.linkChanged(.v4, wlan0, LinkView(id: wlan0, name: "wlan0"))
        XCTAssertTrue(model.state.metered, "another link's view is not this path's")
        monitor.linkChanged(.v4, link, LinkView(id: link, name: "eth0"))
        XCTAssertFalse(model.state.metered)
        monitor.linkChanged(.v4, link, nil)
        XCTAssertFalse(model.state.metered)
        XCTAssertEqual(model.state.interface, "eth0", "the route is still the kernel's word")
    }

    /// The first verdict's hold is the core's: the world hands the hold over and publishes what the core says.
    func testTheFirstVerdictsHoldIsDecidedByTheCore() throws {
        let transport = FakeTransport(.answerAtOnce)
        let resolver = try HostResolver(loop: loop, lookup: Self.lookup)
        let monitor = try ConnectivityMonitor(
            loop: loop, model: model, resolver: resolver, transports: [transport, transport6],
            routeWatches: [routes, routes6])
        monitor.holdFirstVerdict(true)
        monitor.start()
        turn { transport.target != nil }
        routes.say(eth0)
        turn { transport.sent.count > 0 }
        loop.runTurn(waitingAtMost: 1_000_000)
        XCTAssertEqual(model.state.connectivity, .unknown, "held until the services' first view")
        monitor.holdFirstVerdict(false)
        XCTAssertEqual(model.state.connectivity, .full, "the verdict held back is published when let go")
        XCTAssertEqual(model.state.status, .ethernet)
    }
}
