import Foundation
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
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    func testSaveThenLoad() throws {
        let store = StateStore(directory: directory + "/nested")
        XCTAssertTrue(store.load().values.isEmpty, "no file yet is not a problem")
        try store.save([.host: "fd00::1", .interval: "250", .family: "ipv6", .evidence: "traffic"])
        let (values, problems) = store.load()
        XCTAssertEqual(values, [.host: "fd00::1", .interval: "250", .family: "ipv6", .evidence: "traffic"])
        XCTAssertTrue(problems.isEmpty)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/nested"), ["settings"], "no temporary file left behind")
    }

    /// Every target's values in one map by number, the default target as 0 (its lines bare), the
    /// others as `Target.N.`: what is saved reads back the same, and a target without Host is not one.
    func testEveryTargetIsOneMapByNumber() throws {
        let store = StateStore(directory: directory)
        let state = StoredState(targets: [0: [.interval: "250"], 3: [.host: "198.18.2.3", .timeout: "500"], 9: [.host: "fd00::9"]],
                                nextTarget: 12)
        try store.save(state)
        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        XCTAssertTrue(text.contains("\nInterval=250\n"), text)
        XCTAssertTrue(text.contains("Target.3.Host=198.18.2.3\nTarget.3.Timeout=500\n"), text)
        XCTAssertTrue(text.contains("NextTarget=12\n"), text)
        let (read, problems) = store.loadState()
        XCTAssertEqual(read, state)
        XCTAssertEqual(problems, [])
        XCTAssertEqual(read.added.map(\.number), [3, 9], "added targets in the order they were added")
        XCTAssertEqual(store.load().values, [.interval: "250"])

        try "Target.4.Interval=300\nTarget.5.Host=h5\n".write(toFile: store.path, atomically: true, encoding: .utf8)
        let (partial, complaints) = store.loadState()
        XCTAssertEqual(partial, StoredState(targets: [5: [.host: "h5"]], nextTarget: 6))
        XCTAssertEqual(complaints, ["\(store.path): target 4 has no Host, ignored"])
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

    func testSavingNeverFollowsAPlantedTemporaryLink() throws {
        let victim = directory + "/victim"
        try "untouched\n".write(toFile: victim, atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/settings.tmp", withDestinationPath: victim)
        let store = StateStore(directory: directory)
        try store.save([.interval: "250"])
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "untouched\n")
        XCTAssertEqual(store.load().values, [.interval: "250"])
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        XCTAssertEqual(names, ["settings", "settings.tmp", "victim"], "only the planted link besides ours")
    }

    func testAFailedSaveLeavesTheOldFileAndNoTemporary() throws {
        let store = StateStore(directory: directory)
        try store.save([.interval: "250"])
        // A directory where the file should be: rename fails after the temporary was written.
        let blocked = StateStore(directory: directory + "/blocked")
        try FileManager.default.createDirectory(atPath: blocked.path + "/inside", withIntermediateDirectories: true)
        XCTAssertThrowsError(try blocked.save([.interval: "300"]))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/blocked"), ["settings"])
        XCTAssertEqual(store.load().values, [.interval: "250"])
    }

    func testLoadingRefusesLinksFIFOsAndLargeFiles() throws {
        let store = StateStore(directory: directory)
        try FileManager.default.createSymbolicLink(atPath: store.path, withDestinationPath: "/dev/zero")
        XCTAssertEqual(store.load().problems, ["\(store.path): is a symbolic link, ignoring it"])
        unlink(store.path)
        XCTAssertEqual(mkfifo(store.path, 0o644), 0)
        XCTAssertEqual(store.load().problems, ["\(store.path): is not a regular file, ignoring it"], "no wait for a writer")
        unlink(store.path)
        try Data(repeating: 0x41, count: StateStore.maximumSize + 1).write(to: URL(fileURLWithPath: store.path))
        XCTAssertEqual(store.load().problems, ["\(store.path): is larger than 64 KiB, ignoring it"])
        try Data("Interval=250\r\n".utf8).write(to: URL(fileURLWithPath: store.path))
        XCTAssertEqual(store.load().values, [.interval: "250"])
    }
}
