import MonitorRules
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// The one pump the daemon and the simulation both run: the order it carries actions out in,
/// the answers it gives itself, and that no world decides anything.
final class TargetDriverTests: XCTestCase {
    let address = IPAddress.v4([198, 18, 0, 2])
    let route = ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.9")

    /// Writes down every call, in order; does what a test tells it inside one.
    final class RecordingWorld: TargetWorld {
        var now = Instant.origin
        func interfaceIndex(named name: String) -> UInt32? { name == "eth0" ? 2 : nil }
        var routedFamilies: IPFamilies? = [.v4]
        var calls: [String] = []
        var wake: Instant?
        var method: ProbeMethod? = .icmpDatagram
        var published = MonitorState()
        /// The last probe sent.
        var lastSent: (sequence: UInt16, token: UInt64)?
        /// Run inside the next `send` (a world handing the driver an event while it drives).
        var duringSend: (() -> Void)?

        func resolve(_ host: String, family: AddressFamily, generation: UInt64) { calls.append("resolve \(host)") }
        func cancelResolutions() { calls.append("cancelResolutions") }
        func resolveNat64(generation: UInt64) { calls.append("resolveNat64") }
        func watchRoute(_ family: IPFamily, _ address: IPAddress?) {
            calls.append("watchRoute \(family) \(address.map { "\($0)" } ?? "none")")
        }
        func aimProbes(_ family: IPFamily, at address: IPAddress?) -> ProbeMethod? {
            calls.append("aimProbes \(family) \(address.map { "\($0)" } ?? "none")")
            return address == nil ? nil : method
        }
        func send(_ family: IPFamily, sequence: UInt16, token: UInt64, forCheck: Bool, extra: Bool, alsoTCP: Bool) {
            calls.append("send")
            lastSent = (sequence, token)
            let inside = duringSend
            duringSend = nil
            inside?()
            calls.append("send returned")
        }
        func startCheck(_ family: IPFamily, url: String, generation: UInt64, limitMilliseconds: UInt32) {
            calls.append("startCheck")
        }
        func cancelCheck(_ family: IPFamily) { calls.append("cancelCheck") }
        func sampleTraffic(
            _ family: IPFamily, generation: UInt64, host: IPAddress, route: HostRoute?, interface: String,
            inline: Bool
        ) -> TrafficSampling {
            calls.append("sampleTraffic")
            return .later
        }
        func reportChanged(_ family: IPFamily, old: ProbeReport, new: ProbeReport) { calls.append("reportChanged") }
        func checkNeighbor(
            _ family: IPFamily, gateway: IPAddress, interfaceIndex: Int32, source: String, generation: UInt64,
            routine: Bool
        ) {
            calls.append("checkNeighbor \(gateway)")
        }
        func probeBeyond(_ family: IPFamily, host: IPAddress, gateway: IPAddress, hops: UInt8, generation: UInt64) {
            calls.append("probeBeyond \(host) \(hops)")
        }
        func publish(_ update: (inout MonitorState) -> Void) {
            update(&published)
            calls.append("publish \(published.status.rawValue)")
        }
        func verdictReady() { calls.append("verdictReady") }
        func wakeUp(at deadline: Instant?) { wake = deadline }
        func settled() { calls.append("settled") }
    }

    func makeDriver(host: String = "a.test", family: AddressFamily = .ipv4, world: RecordingWorld) -> TargetDriver {
        let core = TargetCore(
            host: host, family: family,
            probeSettings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 200),
            seed: 7)
        return TargetDriver(core: core, world: world)
    }

    /// A name goes to the world's resolver; an address never does: the driver answers it itself,
    /// and the core goes on to the route and the probes in the same call.
    func testAnAddressIsAnsweredByTheDriverNotTheResolver() {
        let world = RecordingWorld()
        let named = makeDriver(world: world)
        named.handle(.start(checkURL: ""))
        XCTAssertEqual(world.calls.first, "resolve a.test")

        let literalWorld = RecordingWorld()
        let literal = makeDriver(host: "198.18.0.2", world: literalWorld)
        literal.handle(.start(checkURL: ""))
        XCTAssertFalse(literalWorld.calls.contains { $0.hasPrefix("resolve") }, "\(literalWorld.calls)")
        XCTAssertTrue(literalWorld.calls.contains("watchRoute IPv4 198.18.0.2"), "\(literalWorld.calls)")
        XCTAssertTrue(literalWorld.calls.contains("aimProbes IPv4 198.18.0.2"), "\(literalWorld.calls)")
        XCTAssertEqual(literal.core[path: .v4].monitor.resolution, .resolved(address))

        // Read by NetAddress's own parser; a zone's interface name is the one thing the world is asked.
        let zonedWorld = RecordingWorld()
        let zoned = makeDriver(host: "fe80::1%eth0", family: .ipv6, world: zonedWorld)
        zoned.handle(.start(checkURL: ""))
        XCTAssertFalse(zonedWorld.calls.contains { $0.hasPrefix("resolve") }, "\(zonedWorld.calls)")
        XCTAssertEqual(
            zoned.core[path: .v6].monitor.resolution,
            .resolved(.v6(AddressBytes([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]), zone: .init(index: 2))))
        // A zone no interface here is named is no literal: the resolver says what it is.
        let unknownWorld = RecordingWorld()
        let unknownZone = makeDriver(host: "fe80::1%wlan9", family: .ipv6, world: unknownWorld)
        unknownZone.handle(.start(checkURL: ""))
        XCTAssertEqual(unknownWorld.calls.first, "resolve fe80::1%wlan9")
    }

    /// The transport's answer to `.probe` is the core's next event, before anything the world
    /// queued meanwhile; a probe goes out only after it.
    func testTheTransportsAnswerComesBeforeAnythingQueued() {
        let world = RecordingWorld()
        let driver = makeDriver(world: world)
        driver.handle(.start(checkURL: ""))
        world.calls = []
        driver.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]))
        driver.handle(.path(.v4, .route(route.routed([.v4]))))
        let aimed = world.calls.firstIndex(of: "aimProbes IPv4 198.18.0.2")
        let sent = world.calls.firstIndex(of: "send")
        XCTAssertNotNil(aimed, "\(world.calls)")
        XCTAssertNotNil(sent, "\(world.calls)")
        if let aimed, let sent { XCTAssertLessThan(aimed, sent) }
        XCTAssertEqual(driver.core[path: .v4].probe.statistics.sent, 1)
    }

    /// The driver lends its core in place: each family's path through `path`, and `ask` answers as the core does.
    func testThePathsAreLentInPlace() {
        let world = RecordingWorld()
        let driver = makeDriver(world: world)
        driver.handle(.start(checkURL: ""))
        driver.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]))
        driver.handle(.path(.v4, .route(route.routed([.v4]))))
        XCTAssertEqual(driver.path(.v4).pointee.monitor.family, .ipv4)
        XCTAssertEqual(driver.path(.v6).pointee.monitor.family, .ipv6)
        XCTAssertEqual(driver.path(.v4).pointee.probe.statistics.sent, 1)
        XCTAssertEqual(driver.path(.v4).pointee.monitor.resolution, driver.core[path: .v4].monitor.resolution)
        XCTAssertEqual(driver.ask { $0.state(previous: MonitorState()) }, driver.core.state(previous: MonitorState()))
        XCTAssertTrue(driver.ask { $0.isOutstanding(.v4, 0) } == driver.core.isOutstanding(.v4, 0))
    }

    /// No re-entry: an event the world hands over while an action is carried out waits until
    /// the actions before it are done; the wake-up follows the last of them.
    func testAnEventHandedOverDuringAnActionWaitsForTheActions() {
        let world = RecordingWorld()
        let driver = makeDriver(world: world)
        driver.handle(.start(checkURL: ""))
        world.calls = []
        var outstandingInside: Bool?
        world.duringSend = { [unowned driver, unowned world] in
            guard let sent = world.lastSent else { return }
            driver.handle(
                .path(
                    .v4,
                    .probe(
                        .sendFailed(
                            sequence: sent.sequence, transient: false, reason: "cannot send: Network is unreachable"))))
            outstandingInside = driver.core.isOutstanding(.v4, sent.sequence)
        }
        driver.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]))
        XCTAssertEqual(Array(world.calls.drop { $0 != "send" }.prefix(2)), ["send", "send returned"])
        XCTAssertEqual(outstandingInside, true, "the failure was handled inside the send")
        XCTAssertEqual(
            world.lastSent.map { driver.core.isOutstanding(.v4, $0.sequence) }, false,
            "the failure was not handled after the send")
        XCTAssertEqual(world.calls.last, "settled")
        XCTAssertEqual(world.wake, driver.core.nextWakeup)
    }

    /// Every step keeps the core's output rule as the world sees it: one publish at most, after
    /// every other action but the verdict being ready.
    func testTheWorldSeesOnePublishPerStepAndItLast() throws {
        let world = RecordingWorld()
        let driver = makeDriver(world: world)
        var steps: [[TargetCore.Action]] = []
        driver.observeStep = { steps.append($0) }
        driver.handle(.start(checkURL: ""))
        driver.handle(.resolved(generation: 0, .success([address]), routedFamilies: [.v4]))
        driver.handle(.path(.v4, .route(route.routed([.v4]))))
        let sent = try XCTUnwrap(world.lastSent)
        driver.handle(.path(.v4, .probe(.reply(sequence: sent.sequence, token: sent.token, via: .icmp))))
        XCTAssertGreaterThan(steps.count, 3)
        for step in steps { XCTAssertNil(TargetCore.outputContractBroken(step), "\(step)") }
        XCTAssertEqual(world.published.status, .ethernet)
    }
}

/// A new Host starts over: nothing measured for the old one is published for it.
final class HostChangeTests: XCTestCase {
    func testANewHostShowsNoRoundTripOrMethodOfTheOldOne() throws {
        let world = TargetDriverTests.RecordingWorld()
        let core = TargetCore(
            host: "198.18.0.2", family: .ipv4,
            probeSettings: ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 200), seed: 7)
        let driver = TargetDriver(core: core, world: world)
        driver.handle(.start(checkURL: ""))
        driver.handle(
            .path(
                .v4,
                .route(
                    ReachabilityVerdict(usable: true, interface: "eth0", kind: .ethernet, source: "198.18.0.9")
                        .routed([.v4]))))
        let sent = try XCTUnwrap(world.lastSent)
        world.now = 3_000_000
        driver.handle(.path(.v4, .probe(.reply(sequence: sent.sequence, token: sent.token, via: .icmp))))
        XCTAssertEqual(world.published.probeMethod, "icmp")
        XCTAssertGreaterThan(world.published.roundTripTime, 0)

        driver.handle(.targetChanged(host: "b.test", family: .ipv4))
        XCTAssertEqual(world.published.status, .unknown)
        XCTAssertEqual(world.published.roundTripTime, 0)
        XCTAssertEqual(world.published.probeMethod, "")
        XCTAssertEqual(world.published.interface, "")
        XCTAssertEqual(world.published.probesAnswered, 1, "the counters only grow")
        driver.handle(
            .resolved(
                generation: 1, .failure(ResolverFailure(message: "cannot resolve b.test")),
                routedFamilies: [.v4]))
        XCTAssertEqual(world.published.status, .none)
        XCTAssertEqual(world.published.roundTripTime, 0)
        XCTAssertEqual(world.published.probeMethod, "")
    }
}
