import Glibc
import NetAddress
import NetCore
import XCTest

/// NetAddress reads numeric addresses itself (the pure targets do not link libc), so the driver answers a
/// literal Host with no parsing handed in: here it is held to inet_pton(3), on the edge cases and on text made
/// to be nearly an address.
final class IPAddressParsingTests: XCTestCase {
    /// What glibc reads of `text`: the bytes, or nil.
    func glibc(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    func ours(_ text: String) -> [UInt8]? { IPAddress(numeric: text).map { Array($0.bytes) } }

    func testEdgeCasesReadAsInetPtonReadsThem() {
        let cases = [
            "0.0.0.0", "255.255.255.255", "198.18.0.1", "256.1.1.1", "1.2.3", "1.2.3.4.", ".1.2.3", "01.2.3.4",
            "1.2.3.04", "00.0.0.0", "1..2.3", "1.2.3.4 ", " 1.2.3.4", "0x7f.0.0.1", "1.2.3.-4", "",
            "::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8", ":::", "1:::2", "1::2::3", ":1::", "1::2:", ":", "1:",
            "12345::", "0001:0002::", "ABCD::ef01", "g::", "::ffff:1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5:6:7:1.2.3.4", "1::1.2.3.4.5", "::ffff:01.2.3.4", "::ffff:1.2.3", "1.2.3.4::",
            "2001:db8::1", "fe80::1", "fd00::", "2001:DB8:0:0:8:800:200C:417A", "::ffff:abcd.1.2.3",
            "1:2:3:4:5:6:7:8:", "::.1.2.3", "1::2:3:4:5:6:7", "1::2:3:4:5:6:7:8",
        ]
        for text in cases { XCTAssertEqual(ours(text), glibc(text), "'\(text)'") }
    }

    /// Strings drawn from the characters addresses are made of, near the shapes they take.
    func testNearlyAddressesReadAsInetPtonReadsThem() {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789abcdefABCDEF:.x%")
        var agreed = 0
        for _ in 0..<200_000 {
            let length = Int.random(in: 0...24, using: &random)
            var text = String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
            if Bool.random(using: &random) {
                let groups = (0..<Int.random(in: 1...9, using: &random)).map { _ in
                    String(UInt16.random(in: 0...0xFFFF, using: &random), radix: 16)
                }
                text = groups.joined(separator: Bool.random(using: &random) ? ":" : "::")
                if Int.random(in: 0..<4, using: &random) == 0 { text += ":1.2.3.4" }
            }
            guard !text.contains("%") else { continue }
            XCTAssertEqual(ours(text), glibc(text), "'\(text)'")
            agreed += 1
        }
        XCTAssertGreaterThan(agreed, 100_000)
    }

    func testAZoneIsANumberOrAnInterfaceTheCallerKnows() {
        XCTAssertEqual(IPAddress(numeric: "fe80::1%3")?.zone, 3)
        XCTAssertNil(IPAddress(numeric: "fe80::1%0"))
        XCTAssertNil(IPAddress(numeric: "fe80::1%"))
        XCTAssertNil(IPAddress(numeric: "fe80::1%eth0"), "a name needs the caller's lookup")
        XCTAssertEqual(IPAddress(numeric: "fe80::1%eth0") { $0 == "eth0" ? 7 : nil }?.zone, 7)
        XCTAssertNil(IPAddress(numeric: "198.18.0.1%eth0") { _ in 7 }, "IPv4 has no zone")
        XCTAssertEqual(IPAddress("fe80::1%lo")?.zone, IPAddress.interfaceIndex("lo"))
    }

    /// The fuzzer's corpus and any crash it found: read as glibc reads them.
    func testTheFuzzCorpusAndCrashesReadAsInetPtonReadsThem() throws {
        let root = String("\(#filePath)".split(separator: "/Tests/", maxSplits: 1).first ?? "")
        var read = 0
        for folder in ["Fuzz/address/corpus", "Fuzz/address/crashes"] {
            for (name, bytes) in Self.files(in: root + "/" + folder) where name != ".keep" {
                // A zone is the caller's to look up; a `%` is looked for as a byte (with a combining mark after it,
                // it is no Character of its own).
                guard bytes.count <= 128, !bytes.contains(0), !bytes.contains(UInt8(ascii: "%")) else { continue }
                let text = String(decoding: bytes, as: UTF8.self)
                XCTAssertEqual(ours(text), glibc(text), "\(folder)/\(name): '\(text)'")
                read += 1
            }
        }
        XCTAssertGreaterThan(read, 10)
    }

    /// Each regular file of `directory`, by name, with its first 4 KiB.
    static func files(in directory: String) -> [(String, [UInt8])] {
        guard let listing = opendir(directory) else { return [] }
        defer { closedir(listing) }
        var files: [(String, [UInt8])] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != "..", let file = fopen(directory + "/" + name, "rb") else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = fread(&buffer, 1, buffer.count, file)
            fclose(file)
            files.append((name, Array(buffer.prefix(count))))
        }
        return files
    }
}
