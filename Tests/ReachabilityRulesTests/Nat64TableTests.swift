import NetAddress
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// The reachability core keeps what routers advertise: one NAT64 prefix per known interface, for
/// its lifetime, attached to the verdicts of routes over that interface.
final class Nat64TableTests: XCTestCase {
    let upFlags = KernelNumbers.linkUp | KernelNumbers.linkRunning | KernelNumbers.linkLowerUp

    /// A core with eth0 (index 2), an IPv6 default route over it, and a target without an address
    /// (the default route's verdict).
    func makeCore() -> (ReachabilityCore, ReachabilityCore.TargetID) { Self.makeCore() }

    /// The gateway of eth0's IPv6 default route: the router whose advertisements are heard.
    static let router = IPAddress.v6([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1])

    static func makeCore() -> (ReachabilityCore, ReachabilityCore.TargetID) {
        let upFlags = KernelNumbers.linkUp | KernelNumbers.linkRunning | KernelNumbers.linkLowerUp
        var core = ReachabilityCore { _ in .ethernet }
        let target = core.addTarget(families: [.v6])
        core.start()
        for output in core.takeOutputs() {
            guard case .send(.dump(_, let sequence)) = output else { continue }
            core.receive([.done(sequence: sequence)], malformed: 0, now: 0)
            for next in core.takeOutputs() {
                guard case .send(.dump(_, let sequence)) = next else { continue }
                core.receive([.done(sequence: sequence)], malformed: 0, now: 0)
                for last in core.takeOutputs() {
                    if case .send(.dump(_, let sequence)) = last {
                        core.receive([.done(sequence: sequence)], malformed: 0, now: 0)
                    }
                }
            }
        }
        core.receive(
            [
                .newLink(Link(index: 2, name: "eth0", flags: upFlags, type: 1)),
                .newAddress(
                    InterfaceAddress(
                        index: 2, address: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 9) + [2]),
                        prefixLength: 64)),
                .newRoute(
                    Route(
                        family: 10, outputInterface: 2,
                        gateway: .v6([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1])),
                    sequence: 0),
            ],
            malformed: 0, now: 0)
        core.evaluate()
        _ = core.takeOutputs()
        return (core, target)
    }

    func pref64(_ lifetime: UInt16) -> [UInt8] { RouterOptionTests.pref64(lifetime: lifetime, code: 0) }

    func testAPrefixLastsItsLifetimeAndIsSaidToTheService() throws {
        var (core, target) = makeCore()
        XCTAssertTrue(core.ready)
        XCTAssertEqual(core.verdict(target)?.interface, "eth0")
        XCTAssertNil(core.advertisedPrefix(target))
        core.receive(
            [.routerOptions(index: 2, options: pref64(600), source: Nat64TableTests.router)], malformed: 0,
            now: 10 * second)
        XCTAssertEqual(core.advertisedPrefix(target), RouterOptionTests.prefix96)
        XCTAssertEqual(core.takeOutputs(), [.nat64PrefixesChanged], "the service hears of it, no watch a verdict")
        XCTAssertEqual(core.nat64Prefixes, [2: RouterOptionTests.prefix96])
        XCTAssertEqual(core.nextWakeup, 610 * second)
        // Refreshed: the same prefix, a later end: nothing to say.
        core.receive(
            [.routerOptions(index: 2, options: pref64(600), source: Nat64TableTests.router)], malformed: 0,
            now: 300 * second)
        XCTAssertEqual(core.takeOutputs(), [])
        XCTAssertEqual(core.nextWakeup, 900 * second)
        core.handleTimeout(now: 899 * second)
        XCTAssertNotNil(core.advertisedPrefix(target))
        core.handleTimeout(now: 900 * second)
        XCTAssertNil(core.advertisedPrefix(target), "dropped at its lifetime's end")
        XCTAssertEqual(core.takeOutputs(), [.nat64PrefixesChanged])
        XCTAssertNil(core.nextWakeup)
    }

    func testALifetimeOfZeroWithdrawsAndALinkGoneTakesItsPrefix() {
        var (core, target) = makeCore()
        core.receive(
            [.routerOptions(index: 2, options: pref64(600), source: Nat64TableTests.router)], malformed: 0, now: 0)
        core.receive(
            [.routerOptions(index: 2, options: pref64(0), source: Nat64TableTests.router)], malformed: 0,
            now: 1 * second)
        XCTAssertNil(core.advertisedPrefix(target))
        core.receive(
            [.routerOptions(index: 2, options: pref64(600), source: Nat64TableTests.router)], malformed: 0,
            now: 2 * second)
        core.receive([.deleteLink(index: 2)], malformed: 0, now: 3 * second)
        XCTAssertTrue(core.nat64.isEmpty)
    }

    /// RFC 8781: a lifetime of 0 withdraws the prefix it names, and no other.
    func testALifetimeOfZeroForAnotherPrefixLeavesTheKnownOne() {
        var (core, target) = makeCore()
        core.receive(
            [.routerOptions(index: 2, options: pref64(600), source: Nat64TableTests.router)], malformed: 0, now: 0)
        _ = core.takeOutputs()
        let other = RouterOptionTests.pref64(
            lifetime: 0, code: 0, prefix: [0x20, 0x01, 0x0d, 0xb8, 0x64, 0, 0, 0, 0, 0, 0, 0])
        core.receive(
            [.routerOptions(index: 2, options: other, source: Nat64TableTests.router)], malformed: 0, now: 1 * second)
        XCTAssertEqual(
            core.advertisedPrefix(target), RouterOptionTests.prefix96, "another prefix's withdrawal took ours")
        XCTAssertFalse(core.takeOutputs().contains { if case .verdict = $0 { true } else { false } }, "nothing changed")
        core.receive(
            [.routerOptions(index: 2, options: pref64(0), source: Nat64TableTests.router)], malformed: 0,
            now: 2 * second)
        XCTAssertNil(core.advertisedPrefix(target), "its own withdrawal ends it")
    }

    /// Nothing a router sends grows the table: options for unknown interfaces, malformed ones and a
    /// flood of prefixes leave at most one prefix per known link, and the log hears of the bad ones
    /// at powers of two only.
    func testWhatARouterSendsIsBounded() {
        var (core, _) = makeCore()
        var logged = 0
        for index in 0..<1000 {
            core.receive(
                [
                    .routerOptions(index: Int32(100 + index), options: pref64(600)),
                    .routerOptions(
                        index: 2, options: RouterOptionTests.pref64(lifetime: 600, code: 7),
                        source: Nat64TableTests.router),
                    .routerOptions(
                        index: 2,
                        options: RouterOptionTests.pref64(
                            lifetime: 600, code: 0,
                            prefix: [0x20, 0x01, 0x0d, 0xb8, UInt8(index % 256), 0, 0, 0, 0, 0, 0, 0]),
                        source: Nat64TableTests.router),
                ],
                malformed: 0, now: UInt64(index) * second)
            logged += core.takeOutputs().filter { if case .ignoredRouterOption = $0 { true } else { false } }.count
        }
        XCTAssertEqual(core.nat64.count, 1)
        XCTAssertEqual(core.statistics.ignoredRouterOptions, 2000)
        XCTAssertLessThanOrEqual(logged, 12)
    }
}

extension ReachabilityCore {
    /// The prefix the routers advertise on the interface `id`'s verdict names: what that target's path reads of its
    /// link (the service's link core holds it).
    func advertisedPrefix(_ id: TargetID) -> Nat64Prefix? {
        nat64Prefix(onInterfaceNamed: verdict(id)?.interface ?? "")
    }
}
