import DBusKit
import EventLoop
import Foundation
import IntegrationSupport
import TestTime
import Timekeeping
import XCTest

/// DBusKit as a client: asynchronous calls, signal subscriptions, and a remote
/// ObjectManager followed through a python3-dbusmock service on a private bus.
final class RemoteObjectManagerTests: XCTestCase {
    var bus: PrivateBus!
    var loop: MainLoop!
    var connection: BusConnection!

    static let service = "org.freedesktop.ModemManager1"
    static let root = "/org/freedesktop/ModemManager1"
    static let modem = "org.freedesktop.ModemManager1.Modem"

    override func setUpWithError() throws {
        bus = try PrivateBus()
        loop = try MainLoop()
        connection = try BusConnection(.address(bus.address), loop: loop)
    }

    override func tearDown() {
        connection?.close()
        connection = nil
        loop = nil
        bus?.stop()
    }

    /// Runs the loop until `condition` holds or `timeout` passes; returns whether it held.
    @discardableResult
    func run(until condition: @escaping () -> Bool, timeout: Double = 5) -> Bool {
        if condition() { return true }
        let check = loop.schedule(after: 2_000_000, repeats: true) { [loop] in if condition() { loop?.quit(status: 0) }
        }
        let deadline = loop.schedule(after: .nanoseconds(UInt64(timeout * 1e9))) { [loop] in loop?.quit(status: 0) }
        _ = loop.run()
        loop.cancel(check)
        loop.cancel(deadline)
        return condition()
    }

    func testFollowsObjectsAndPropertiesAndTheServiceComingAndGoing() throws {
        let manager = RemoteObjectManager(
            connection: connection, service: Self.service, path: Self.root, interfaces: [Self.modem])
        var changes = 0
        manager.onChange = { changes += 1 }
        XCTAssertTrue(run(until: { manager.isReady }))
        XCTAssertFalse(manager.hasOwner)
        XCTAssertTrue(manager.objects.isEmpty)

        let mock = try MockService.modemManager(bus: bus)
        XCTAssertTrue(run(until: { manager.hasOwner && manager.isReady }))
        try mock.addModem(0, netPorts: ["wwan0"], accessTechnologies: 1 << 14)
        XCTAssertTrue(run(until: { manager.objects.count == 1 }), "\(manager.objects)")
        let path = Self.root + "/Modem/0"
        XCTAssertEqual(manager.objects[path]?.property("AccessTechnologies", of: Self.modem), .uint32(1 << 14))
        XCTAssertEqual(
            manager.objects[path]?.property("Ports", of: Self.modem),
            .array(
                .structure([.string, .uint32]),
                [
                    .structure([.string("cdc-wdm0"), .uint32(6)]),
                    .structure([.string("wwan0"), .uint32(2)]),
                ]))

        try mock.setAccessTechnologies(modem: 0, 1 << 5)
        XCTAssertTrue(
            run(until: { manager.objects[path]?.property("AccessTechnologies", of: Self.modem) == .uint32(1 << 5) }))

        // An interface nobody asked for is not kept.
        try mock.call(
            Self.root, "org.freedesktop.DBus.Mock", "AddObject", "ssa{sv}a(ssss)",
            [Self.root + "/SIM/0", "org.freedesktop.ModemManager1.Sim", "1", "Imsi", "s", "001010000000000", "0"])
        try mock.call(
            Self.root, "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
            [
                "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", "oa{sa{sv}}", "2", "o", Self.root + "/SIM/0",
                "a{sa{sv}}", "1", "org.freedesktop.ModemManager1.Sim", "1", "Imsi", "s", "001010000000000",
            ])
        try mock.removeModem(0)
        XCTAssertTrue(run(until: { manager.objects.isEmpty }), "\(manager.objects)")

        // A restarted service is loaded again from scratch.
        try mock.addModem(1, netPorts: ["wwan1"], accessTechnologies: 1 << 15)
        XCTAssertTrue(run(until: { manager.objects.count == 1 }))
        mock.stop()
        XCTAssertTrue(run(until: { !manager.hasOwner && manager.objects.isEmpty }))
        let restarted = try MockService.modemManager(bus: bus)
        try restarted.addModem(2, netPorts: ["wwan2"], accessTechnologies: 1 << 1)
        XCTAssertTrue(run(until: { manager.objects[Self.root + "/Modem/2"] != nil }))
        XCTAssertEqual(manager.objects.count, 1)
        XCTAssertGreaterThan(changes, 6)
    }

    /// GetManagedObjects that hangs: the loop keeps turning, the load times out and is retried.
    func testAServiceThatNeverAnswersStallsNothing() throws {
        let mock = try MockService(bus: bus, name: Self.service, arguments: [Self.service, Self.root, Self.service])
        try mock.call(
            Self.root, "org.freedesktop.DBus.Mock", "AddMethod", "sssss",
            [
                "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", "", "a{oa{sa{sv}}}",
                "self.calls = getattr(self, 'calls', 0) + 1; __import__('time').sleep(2 if self.calls == 1 else 0); ret = {}",
            ])
        let manager = RemoteObjectManager(
            connection: connection, service: Self.service, path: Self.root, interfaces: [Self.modem])
        manager.callTimeoutMilliseconds = 300
        var last = loop.now()
        var longestGap = Duration.zero
        let ticker = loop.schedule(after: 10_000_000, repeats: true) { [loop] in
            let now = loop!.now()
            longestGap = max(longestGap, now - last)
            last = now
        }
        XCTAssertFalse(run(until: { manager.isReady }, timeout: 1.5))
        loop.cancel(ticker)
        XCTAssertTrue(manager.hasOwner)
        XCTAssertLessThan(longestGap, 250_000_000, "the loop stalled for \(longestGap)")
        // Once it answers (empty), a retry loads it.
        XCTAssertTrue(run(until: { manager.isReady }, timeout: 10))
    }

    func testACancelledCallIsNeverAnswered() throws {
        let message = try Message.busCall("ListNames", [])
        var answered = 0
        let cancelled = connection.call(message) { _ in answered += 1 }
        cancelled.cancel()
        var names: [DBusValue] = []
        let kept = connection.call(message) { result in
            if case .success(let reply) = result, case .array(_, let list)? = try? reply.arguments().first {
                names = list
            }
        }
        XCTAssertTrue(run(until: { !kept.isPending }))
        XCTAssertEqual(answered, 0)
        XCTAssertTrue(names.contains(.string(connection.uniqueName)))

        let error = connection.call(try Message.busCall("NoSuchMethod", [])) { result in
            if case .failure(let failure) = result {
                XCTAssertEqual(failure.name, "org.freedesktop.DBus.Error.UnknownMethod")
            } else {
                XCTFail("expected an error")
            }
        }
        XCTAssertTrue(run(until: { !error.isPending }))
    }

    func testSubscriptionsDeliverMatchingSignalsUntilCancelled() throws {
        var owners: [String] = []
        let subscription = connection.subscribe(
            MatchRule(
                sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                member: "NameOwnerChanged", arg0: "org.example.Watched")
        ) { message in
            owners.append((try? message.arguments())?[2].stringValue ?? "?")
        }
        XCTAssertNotNil(subscription)
        XCTAssertNil(connection.subscribe(MatchRule(member: "bad'member")) { _ in })
        let first = try MockService(
            bus: bus, name: "org.example.Watched", arguments: ["org.example.Watched", "/", "org.example.Watched"])
        XCTAssertTrue(run(until: { owners.count == 1 }))
        first.stop()
        XCTAssertTrue(run(until: { owners.count == 2 }))
        XCTAssertEqual(owners.last, "")
        subscription?.cancel()
        let second = try MockService(
            bus: bus, name: "org.example.Watched", arguments: ["org.example.Watched", "/", "org.example.Watched"])
        _ = run(until: { false }, timeout: 0.3)
        XCTAssertEqual(owners.count, 2)
        second.stop()
    }
}
