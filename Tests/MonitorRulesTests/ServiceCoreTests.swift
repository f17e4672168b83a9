import MonitorRules
import TestTime
import Timekeeping
import XCTest

/// The service's core above its targets: announcements merged and followed, link facts for every target,
/// sleeps announced or found from the boot clock; and its driver, which decides nothing.
final class ServiceCoreTests: XCTestCase {
    let api = "https://api.test/capport"

    func testARoutersAnnouncementGoesBeforeDHCPsAndTheAnswerReachesEveryTarget() throws {
        var core = ServiceCore()
        let dhcp = LinkFactsTable(["eth0": LinkFacts(dhcpPortalAPI: "https://dhcp.test/api")])
        var actions = core.handle(.servicesSaid(dhcp), now: 0, slept: 0)
        XCTAssertTrue(
            actions.contains(.fetchPortalAPI(interface: "eth0", uri: "https://dhcp.test/api", generation: 1)),
            "\(actions)")
        // The services' word is published whatever the follower did.
        XCTAssertEqual(actions.last, .linkFacts(core.linkFacts))
        actions = core.handle(.routersAnnounced(["eth0": api]), now: 11 * second, slept: 0)
        XCTAssertTrue(actions.contains(.cancelPortalAPIFetch(interface: "eth0")) || actions.contains { $0.isFetch })
        guard case .fetchPortalAPI(_, let uri, let generation) = actions.first(where: \.isFetch) else {
            return XCTFail("the router's announcement is asked: \(actions)")
        }
        XCTAssertEqual(uri, api, "the router's word is the fresher")
        actions = core.handle(
            .portalAPIFetched(interface: "eth0", generation: generation, .success(CapportAnswer(captive: true))),
            now: 11 * second, slept: 0)
        XCTAssertEqual(core.portalAPIAnswer(on: "eth0")?.captive, true)
        guard case .linkFacts(let table) = actions.last else { return XCTFail("no link facts in \(actions)") }
        XCTAssertEqual(table["eth0"]?.portalAPI?.answer?.captive, true)
        XCTAssertEqual(table["eth0"]?.dhcpPortalAPI, "https://dhcp.test/api", "the services' facts stay")
        // The same announcement again changes nothing, so nothing is published.
        XCTAssertEqual(core.handle(.routersAnnounced(["eth0": api]), now: 12 * second, slept: 0), [])
        // While captive, it is asked again in 2 s.
        XCTAssertEqual(core.nextWakeup, 11 * second + CapportFollower.captiveRefresh)
    }

    func testAStaleFetchesAnswerChangesNothing() {
        var core = ServiceCore()
        _ = core.handle(.routersAnnounced(["eth0": api]), now: 0, slept: 0)
        XCTAssertTrue(core.isFetching(interface: "eth0", generation: 1))
        let stale = core.handle(
            .portalAPIFetched(interface: "eth0", generation: 7, .success(CapportAnswer(captive: true))),
            now: 10 * ms, slept: 0)
        XCTAssertFalse(stale.contains { if case .linkFacts = $0 { true } else { false } })
        XCTAssertNil(core.portalAPIAnswer(on: "eth0"))
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

    /// Every action is one world call, in order, and an event handed in meanwhile waits for them.
    func testTheDriverCarriesOutEachActionAsOneWorldCallAndIsNeverReentered() {
        let world = RecordingWorld()
        let driver = ServiceDriver(world: world)
        world.driver = driver
        var steps: [[ServiceCore.Action]] = []
        driver.observeStep = { steps.append($0) }
        world.sleptNow = 0
        driver.handle(.routersAnnounced(["eth0": api]))
        world.sleptNow = 2 * second
        driver.handle(.targetWakes)
        driver.handle(.sleepAnnounced(true))
        XCTAssertEqual(world.calls, steps.flatMap { $0 }.map(RecordingWorld.call))
        XCTAssertEqual(world.calls.filter { $0.hasPrefix("fetch") }, ["fetch eth0 \(api) 1"])
        XCTAssertEqual(
            world.calls.suffix(4),
            ["log the machine slept for 2 s (CLOCK_BOOTTIME jumped)", "slept 2000 ms", "sleep true", "writeHistories"])
        XCTAssertTrue(world.reentered.isEmpty, "handed in while driving: \(world.reentered)")
        XCTAssertEqual(world.wakeUps.last, driver.core.nextWakeup)
        // The fetch the world answered while its linkFacts call ran was handed to the core after that step.
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
    private var fetched: (String, UInt64)?

    var now: Instant { 0 }
    var slept: Duration { sleptNow }

    static func call(_ action: ServiceCore.Action) -> String {
        switch action {
        case .fetchPortalAPI(let interface, let uri, let generation): "fetch \(interface) \(uri) \(generation)"
        case .cancelPortalAPIFetch(let interface): "cancel \(interface)"
        case .log(let line): "log \(line)"
        case .linkFacts: "linkFacts"
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

    func fetchPortalAPI(interface: String, uri: String, generation: UInt64) {
        record("fetch \(interface) \(uri) \(generation)")
        fetched = (interface, generation)
    }
    func cancelPortalAPIFetch(interface: String) { record("cancel \(interface)") }
    func log(_ line: String) { record("log \(line)") }
    func linkFactsChanged(_ table: LinkFactsTable) {
        record("linkFacts")
        guard let (interface, generation) = fetched else { return }
        fetched = nil
        // Handed in while the driver carries out a step: it must wait, not run inside this call.
        inside = true
        driver?.handle(
            .portalAPIFetched(
                interface: interface, generation: generation, .success(CapportAnswer(captive: false))))
        inside = false
        answeredInside = true
    }
    func machineSleeps(_ asleep: Bool) { record("sleep \(asleep)") }
    func machineSlept(_ jump: Duration) { record("slept \(jump.milliseconds) ms") }
    func writeHistories() { record("writeHistories") }
    func holdFirstVerdicts(_ hold: Bool) { record("hold \(hold)") }
    func wakeUp(at deadline: Instant?) { wakeUps.append(deadline) }
}
