import DaemonWorlds
import EventLoop
import MonitorRules
import NetAddress
import Probe
import ProbeRules
import ReachabilityRules
import XCTest

/// The daemon's world sends the checks the links' cores decide: one on the wire per (link, gateway) however many
/// targets ask, each answer to every path that waits for it, and a check nobody waits for cancelled.
final class ServiceNeighborChecksTests: XCTestCase {
    final class Targets: ServiceTargets {
        var service: ServiceDriver?
        var answers: [String] = []
        func wake(_ number: Int) {}
        func route(_ path: ServiceCore.PathKey, _ verdict: ReachabilityVerdict, link: LinkView?) {}
        func neighborAnswered(_ path: ServiceCore.PathKey, generation: UInt64, _ answer: NeighborAnswer) {
            answers.append("\(path.target) \(path.family) \(generation) \(answer)")
        }
        func linkChanged(_ path: ServiceCore.PathKey, _ id: LinkID, _ view: LinkView?) {}
        func sleep(_ asleep: Bool) {}
        func holdFirstVerdicts(_ hold: Bool) {}
    }

    final class Wire {
        var started: [(gateway: IPAddress, index: Int32, source: IPAddress?)] = []
        var completions: [(NeighborAnswer) -> Void] = []
        var cancelled = 0
    }

    func testOneCheckOnTheWirePerLinkAndGatewayForEveryTargetThatAsks() throws {
        let loop = try MainLoop()
        let targets = Targets()
        let wire = Wire()
        let resolver = try HostResolver(loop: loop, lookup: ConnectivityMonitorDriverTests.lookup)
        let world = DaemonServiceWorld(
            loop: loop, fetcher: PortalAPIFetcher(loop: loop, resolver: resolver, http: nil, caFile: nil),
            history: nil, targets: targets
        ) { gateway, index, source, completion in
            wire.started.append((gateway, index, source))
            wire.completions.append(completion)
            return { wire.cancelled += 1 }
        }
        let gateway = IPAddress.v4([198, 18, 0, 1])
        func ask(_ target: Int, generation: UInt64) {
            world.driver.handle(
                .neighborAsked(
                    ServiceCore.PathKey(target: target, family: .v4), gateway: gateway, interfaceIndex: 2,
                    source: "198.18.0.9", generation: generation, routine: false))
        }
        world.driver.handle(.kernelLinks([2: "eth0"]))
        ask(0, generation: 1)
        ask(1, generation: 4)
        XCTAssertEqual(wire.started.count, 1, "target 1 joins target 0's check")
        XCTAssertEqual(wire.started.first?.gateway, gateway)
        XCTAssertEqual(wire.started.first?.index, 2)
        XCTAssertEqual(wire.started.first?.source, .v4([198, 18, 0, 9]))
        wire.completions[0](.reachable)
        XCTAssertEqual(targets.answers, ["0 IPv4 1 reachable", "1 IPv4 4 reachable"])
        // A late second answer of the same check is not taken.
        wire.completions[0](.unreachable)
        XCTAssertEqual(targets.answers.count, 2)
        // A suspicion asks afresh; when its only asker goes, the check is cancelled and its answer never heard.
        ask(0, generation: 2)
        XCTAssertEqual(wire.started.count, 2)
        world.driver.handle(.targetGone(0))
        XCTAssertEqual(wire.cancelled, 1)
        XCTAssertEqual(targets.answers.count, 2)
        XCTAssertEqual(world.neighborChecksStarted, 2)
    }
}
