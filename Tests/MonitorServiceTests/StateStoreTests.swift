import Glibc
import MonitorService
import XCTest

final class StateStoreTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/netobserver-state-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp failed") }
        directory = String(cString: made)
    }

    override func tearDown() {
        unlink(directory + "/nested/settings")
        rmdir(directory + "/nested")
        unlink(directory + "/settings")
        rmdir(directory)
    }

    func testSaveThenLoad() throws {
        let store = StateStore(directory: directory + "/nested")
        XCTAssertTrue(store.load().values.isEmpty, "no file yet is not a problem")
        try store.save([.host: "fd00::1", .interval: "250", .family: "ipv6"])
        let (values, problems) = store.load()
        XCTAssertEqual(values, [.host: "fd00::1", .interval: "250", .family: "ipv6"])
        XCTAssertTrue(problems.isEmpty)
        XCTAssertEqual(access(store.path + ".tmp", F_OK), -1, "no temporary file left behind")
    }

    func testCorruptFileIsReportedNotFatal() throws {
        let store = StateStore(directory: directory)
        let garbage = "Host=example.org\n\u{1}\u{2}garbage\nNoSuchKey=1\nInterval=250\n"
        let fd = open(store.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = garbage.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        let (values, problems) = store.load()
        XCTAssertEqual(values, [.host: "example.org", .interval: "250"])
        XCTAssertEqual(problems.count, 2)
    }
}
