import NetAddress
import NetCore
import ReachabilityRules
import XCTest

/// Router advertisements' options as the kernel hands them over (RFC 8781 PREF64), and RFC 6052's
/// address synthesis and RFC 7050's discovery: input from the network, read without trust.
final class RouterOptionTests: XCTestCase {
    static let prefix96 = Nat64Prefix(
        prefix: .v6([0x20, 0x01, 0x0d, 0xb8, 0, 0x64] + [UInt8](repeating: 0, count: 10)), length: 96)

    /// 16 bytes: type 38, length 2, 13 bits of lifetime / 8 and a 3-bit code, 96 bits of prefix.
    static func pref64(
        lifetime: UInt16, code: UInt16, prefix: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0x64, 0, 0, 0, 0, 0, 0]
    ) -> [UInt8] {
        let field = (lifetime / 8) << 3 | code
        return [38, 2, UInt8(field >> 8), UInt8(field & 0xff)] + prefix
    }

    func testAPref64OptionGivesThePrefixAndItsLifetime() {
        let (options, malformed) = RouterOption.parse(Self.pref64(lifetime: 600, code: 0))
        XCTAssertEqual(malformed, [])
        XCTAssertEqual(options, [.pref64(Self.prefix96, lifetimeSeconds: 600)])
        XCTAssertEqual("\(Self.prefix96)", "2001:db8:64::/96")
        // Every defined length code, and bits past the length cleared.
        for (code, length) in [(1, 64), (2, 56), (3, 48), (4, 40), (5, 32)] as [(UInt16, UInt8)] {
            let (parsed, _) = RouterOption.parse(
                Self.pref64(lifetime: 8, code: code, prefix: [UInt8](repeating: 0xff, count: 12)))
            guard case .pref64(let prefix, 8)? = parsed.first else { return XCTFail("code \(code): \(parsed)") }
            XCTAssertEqual(prefix.length, length)
            XCTAssertEqual(prefix.prefix.bytes.filter { $0 != 0 }.count, Int(length) / 8, "\(prefix)")
        }
        // A lifetime of 0 withdraws: still a well-formed option.
        XCTAssertEqual(
            RouterOption.parse(Self.pref64(lifetime: 0, code: 0)).options, [.pref64(Self.prefix96, lifetimeSeconds: 0)])
    }

    func testMalformedOptionsAreNamedAndNothingIsTakenFromThem() {
        XCTAssertEqual(RouterOption.parse(Self.pref64(lifetime: 600, code: 6)).options, [], "code 6 is not defined")
        XCTAssertEqual(RouterOption.parse(Self.pref64(lifetime: 600, code: 7)).malformed.count, 1)
        let long = [38, 3] + [UInt8](repeating: 0, count: 22)
        XCTAssertEqual(RouterOption.parse(long).options, [])
        XCTAssertEqual(RouterOption.parse(long).malformed.count, 1)
        XCTAssertEqual(RouterOption.parse([38, 0, 0, 0]).malformed.count, 1, "a zero length frames nothing")
        XCTAssertEqual(
            RouterOption.parse(Array(Self.pref64(lifetime: 600, code: 0).prefix(10))).options, [], "truncated")
        // An unknown option is skipped, a good one after it still read.
        let unknown: [UInt8] = [99, 1, 0, 0, 0, 0, 0, 0]
        XCTAssertEqual(RouterOption.parse(unknown + Self.pref64(lifetime: 8, code: 0)).options.count, 1)
        XCTAssertEqual(RouterOption.parse([]).options, [])
    }

    /// RFC 6052 section 2.4's examples: 192.0.2.33 under each prefix length.
    func testSynthesisAndExtractionFollowRFC6052() throws {
        let v4 = IPAddress.v4([192, 0, 2, 33])
        let examples: [(UInt8, String)] = [
            (32, "2001:db8:c000:221::"), (40, "2001:db8:1c0:2:21::"), (48, "2001:db8:122:c000:2:2100::"),
            (56, "2001:db8:122:3c0:0:221::"), (64, "2001:db8:122:344:c0:2:2100:0"), (96, "2001:db8:122:344::c000:221"),
        ]
        let bytes: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0x01, 0x22, 0x03, 0x44] + [UInt8](repeating: 0, count: 8)
        for (length, expected) in examples {
            var own = bytes
            for index in Int(length) / 8..<16 { own[index] = 0 }
            let prefix = Nat64Prefix(prefix: .v6(AddressBytes(own)), length: length)
            let synthesized = try XCTUnwrap(prefix.synthesize(v4))
            XCTAssertEqual(synthesized, IPAddress(expected), "/\(length): \(synthesized)")
            XCTAssertEqual(prefix.extract(synthesized), v4, "/\(length)")
        }
        XCTAssertNil(Self.prefix96.synthesize(.v6(AddressBytes(repeating: 1, count: 16))), "only IPv4 is synthesized")
    }

    /// RFC 7050: the prefix is what precedes 192.0.0.170 or .171 in ipv4only.arpa's AAAA answer.
    func testDiscoveryFromIpv4onlyArpa() {
        let answer = Self.prefix96.synthesize(.v4([192, 0, 0, 170]))!
        XCTAssertEqual(Nat64Prefix.discovered(in: [answer]), Self.prefix96)
        XCTAssertNil(
            Nat64Prefix.discovered(in: [.v6(AddressBytes([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12)))])
        )
        XCTAssertNil(Nat64Prefix.discovered(in: [.v4([192, 0, 0, 170])]))
    }
}
