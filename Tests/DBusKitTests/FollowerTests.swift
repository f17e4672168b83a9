import Cellular
import DBusKit
import EventLoop
import Foundation
import IntegrationSupport
import MonitorRules
import TestTime
import Timekeeping
import XCTest

/// INTERFACE.md "Followers come back": the system-bus follower survives what another
/// peer sends it, and reconnects (with backoff) when its bus goes away and returns.
final class FollowerTests: XCTestCase {
    var bus: PrivateBus!
    var loop: MainLoop!

    override func setUpWithError() throws {
        bus = try PrivateBus()
        loop = try MainLoop()
    }

    override func tearDown() {
        loop = nil
        bus?.stop()
    }

    @discardableResult
    func run(until condition: @escaping () -> Bool, timeout: Double = 10) -> Bool {
        if condition() { return true }
        let check = loop.schedule(after: 5_000_000, repeats: true) { [loop] in if condition() { loop?.quit(status: 0) }
        }
        let deadline = loop.schedule(after: .nanoseconds(UInt64(timeout * 1e9))) { [loop] in loop?.quit(status: 0) }
        _ = loop.run()
        loop.cancel(check)
        loop.cancel(deadline)
        return condition()
    }

    private func generation(_ watch: LinkFactsWatch) -> String? {
        watch.table["wwan0"]?.generation?.rawValue
    }

    func testAnOversizedSignalFromAnotherPeerCutsNothing() throws {
        let modemManager = try MockService.modemManager(bus: bus)
        defer { modemManager.stop() }
        try modemManager.addModem(0, netPorts: ["wwan0"], accessTechnologies: 1 << 14)
        let watch = LinkFactsWatch(loop: loop, bus: .address(bus.address))
        var news: [String] = []
        watch.onNews = { news.append($0) }
        watch.start()
        XCTAssertTrue(run { self.generation(watch) == "4g" }, "\(news)")
        // 5 MiB and 40 MiB unicast signals to the follower's own name, from a peer it does not follow.
        let peer = try runCommand(
            [
                Paths.python, "-c",
                """
                import dbus, sys
                bus = dbus.bus.BusConnection(sys.argv[1])
                for size in (5 << 20, 40 << 20):
                    signal = dbus.lowlevel.SignalMessage("/x", "org.example.Noise", "Noise")
                    signal.append(dbus.ByteArray(b"n" * size), signature="ay")
                    signal.set_destination(sys.argv[2])
                    bus.send_message(signal)
                bus.flush()
                """, bus.address, watch.uniqueName,
            ], timeout: 60)
        XCTAssertEqual(peer.status, 0, peer.stderr)
        run(until: { false }, timeout: 1.5)
        try modemManager.setAccessTechnologies(modem: 0, 1 << 15)
        XCTAssertTrue(run { self.generation(watch) == "5g" }, "still following after the noise: \(news)")
        XCTAssertFalse(news.contains { $0.contains("lost the system bus") }, "\(news)")
    }

    func testTheBusGoingAwayAndComingBackIsFollowedAgain() throws {
        var modemManager = try MockService.modemManager(bus: bus)
        try modemManager.addModem(0, netPorts: ["wwan0"], accessTechnologies: 1 << 14)
        let watch = LinkFactsWatch(loop: loop, bus: .address(bus.socketAddress))
        var news: [String] = []
        watch.onNews = { news.append($0) }
        watch.start()
        XCTAssertTrue(run { self.generation(watch) == "4g" }, "\(news)")
        modemManager.stop()
        try bus.restart()
        XCTAssertTrue(run { watch.table == LinkFactsTable() }, "the facts go with the bus")
        XCTAssertTrue(news.contains { $0.hasPrefix("lost the system bus") }, "\(news)")
        modemManager = try MockService.modemManager(bus: bus)
        defer { modemManager.stop() }
        try modemManager.addModem(1, netPorts: ["wwan0"], accessTechnologies: 1 << 15)
        let back = Date()
        XCTAssertTrue(
            run(until: { self.generation(watch) == "5g" }, timeout: 15), "reloaded once the bus is back: \(news)")
        print(
            "measured follower back \(String(format: "%.1f", Date().timeIntervalSince(back))) s after its bus (first retry after 1 s)"
        )
        XCTAssertTrue(
            news.contains { $0.hasPrefix("system bus reached again") }
                || news.filter { $0.hasPrefix("ModemManager: 1 modem") }.count == 2,
            "\(news)")
    }

    func testNoBusAtAllIsTriedAgainWithoutBlocking() throws {
        let watch = LinkFactsWatch(loop: loop, bus: .address("unix:path=\(bus.directory)/nothing-here"))
        var news: [String] = []
        watch.onNews = { news.append($0) }
        let started = loop.now()
        watch.start()
        XCTAssertLessThan(loop.now() - started, 50_000_000, "opening never waits")
        run(until: { false }, timeout: 3.5)
        XCTAssertEqual(
            news.filter { $0.hasPrefix("cannot reach the system bus") }.count, 1, "said once, not per attempt: \(news)")
        XCTAssertEqual(watch.table, LinkFactsTable())
    }
}
