import NetAddress
import ReachabilityRules
import TestTime
import Timekeeping
import XCTest

/// Each verdict names the address it is about, so a watch that moved on can tell one about the address it
/// watched before (taken in the batch its move came in) from one about its own.
final class VerdictDestinationTests: XCTestCase {
    static let firstAddress = IPAddress.v6([0x20, 0x01, 0x0d, 0xb8, 0, 9] + [UInt8](repeating: 0, count: 9) + [1])
    static let secondAddress = IPAddress.v6([0x20, 0x01, 0x0d, 0xb8, 0, 9] + [UInt8](repeating: 0, count: 9) + [2])

    /// The route lookup the core asks for `address`, answered over eth0.
    private func answerLookup(_ core: inout ReachabilityCore, for address: IPAddress) throws {
        core.evaluate()
        let sequence = try XCTUnwrap(
            core.takeOutputs().lazy.compactMap { output -> UInt32? in
                if case .send(.routeLookup(let target, let sequence)) = output, target == address {
                    sequence
                } else {
                    nil
                }
            }.first, "no route lookup for \(address)")
        var route = Route(family: 10, outputInterface: 2, gateway: Nat64TableTests.router)
        route.destination = address
        route.destinationLength = 128
        core.receive([.newRoute(route, sequence: sequence)], malformed: 0, now: 1 * second)
    }

    func testAVerdictNamesTheAddressItIsAbout() throws {
        var (core, target) = Nat64TableTests.makeCore()
        XCTAssertNil(core.verdict(target)?.destination, "a default route's verdict is about no address")
        core.setTarget(Self.firstAddress, for: target)
        try answerLookup(&core, for: Self.firstAddress)
        XCTAssertEqual(core.verdict(target)?.destination, Self.firstAddress.bytes)
        let delivered = core.takeOutputs().compactMap { output -> ReachabilityVerdict? in
            if case .verdict(let verdict, _) = output { verdict } else { nil }
        }
        XCTAssertEqual(delivered.map(\.destination), [Self.firstAddress.bytes])
        core.setTarget(Self.secondAddress, for: target)
        try answerLookup(&core, for: Self.secondAddress)
        XCTAssertEqual(core.verdict(target)?.destination, Self.secondAddress.bytes)
    }
}
