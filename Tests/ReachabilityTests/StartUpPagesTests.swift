import CLinux
import Glibc
import XCTest

/// What start-up alone touched is let go (`CLinux_drop_clean_file_pages`), and what comes back comes back a page
/// at a time: without that, the kernel maps 64 KiB of a file mapping around every page fault, and an idle
/// daemon's few functions kept megabytes of the static Swift runtime's code resident.
final class StartUpPagesTests: XCTestCase {
    private let page = Int(sysconf(Int32(_SC_PAGESIZE)))

    func testAPageUsedAgainAfterTheDropComesBackAlone() throws {
        // On a file system with a page cache, as the daemon's binary is (not tmpfs).
        let path = "/var/tmp/netobserver-pages-\(getpid())"
        let size = 1 << 20
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer {
            close(fd)
            unlink(path)
        }
        let bytes = [UInt8](repeating: 0x5a, count: size)
        XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, size) }, size)
        let mapping = try XCTUnwrap(mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0))
        XCTAssertNotEqual(mapping, MAP_FAILED)
        defer { munmap(mapping, size) }
        let base = mapping.assumingMemoryBound(to: UInt8.self)
        XCTAssertEqual(base[0], 0x5a)

        XCTAssertGreaterThan(CLinux_drop_clean_file_pages(), 0)
        // Userfaultfd's asynchronous write-protection, which ends fault-around for a mapping, came in Linux 6.7.
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let version = release.split(separator: ".").prefix(2).compactMap { Int($0.prefix { $0.isNumber }) }
        try XCTSkipIf(
            version.count == 2 && (version[0], version[1]) < (6, 7),
            "Linux \(release): pages come back 64 KiB at a time")
        XCTAssertEqual(try present(mapping, pages: size / page), 0, "the drop left pages of the file mapped")
        XCTAssertEqual(base[5 * page], 0x5a)
        XCTAssertEqual(try present(mapping, pages: size / page), 1, "a page used again came back with others around it")
    }

    /// How many of the first `pages` pages of `mapping` this process has mapped (/proc/self/pagemap, bit 63).
    private func present(_ mapping: UnsafeMutableRawPointer, pages: Int) throws -> Int {
        let fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var entries = [UInt64](repeating: 0, count: pages)
        let offset = off_t(UInt(bitPattern: mapping) / UInt(page) * 8)
        let read = entries.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
        XCTAssertEqual(read, pages * 8)
        return entries.filter { $0 >> 63 == 1 }.count
    }
}
