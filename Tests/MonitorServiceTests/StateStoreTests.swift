import DaemonWorlds
import EventLoop
import Foundation
import Glibc
import HelperProcess
import MonitorContract
import MonitorRules
import MonitorService
import ProbeRules
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
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: directory + "/nested"), ["settings"],
            "no temporary file left behind")
    }

    /// Every target's values in one map by number, the default target as 0 (its lines bare), the
    /// others as `Target.N.`: what is saved reads back the same, and a target without Host is not one.
    func testEveryTargetIsOneMapByNumber() throws {
        let store = StateStore(directory: directory)
        let state = StoredState(
            targets: [0: [.interval: "250"], 3: [.host: "198.18.2.3", .timeout: "500"], 9: [.host: "fd00::9"]],
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
        // A directory where the file should be, and another where it would be set aside (what cannot be read is
        // never written over, and this cannot be moved): the save fails after the temporary was written.
        let blocked = StateStore(directory: directory + "/blocked")
        try FileManager.default.createDirectory(atPath: blocked.path + "/inside", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: blocked.path + ".corrupt/inside", withIntermediateDirectories: true)
        XCTAssertThrowsError(try blocked.save([.interval: "300"]))
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: directory + "/blocked").sorted(),
            ["settings", "settings.corrupt"])
        XCTAssertEqual(store.load().values, [.interval: "250"])
    }

    func testLoadingRefusesLinksFIFOsAndLargeFiles() throws {
        let store = StateStore(directory: directory)
        func refusal() -> AtomicFile.Refused? {
            store.loaded(
                AtomicFile(directory: directory, name: StateStore.fileName).read(maximumSize: StateStore.maximumSize)
            ).refused
        }
        func refused() -> String? { refusal()?.description }
        try FileManager.default.createSymbolicLink(atPath: store.path, withDestinationPath: "/dev/zero")
        XCTAssertEqual(refused(), "is a symbolic link")
        unlink(store.path)
        XCTAssertEqual(mkfifo(store.path, 0o644), 0)
        XCTAssertEqual(refused(), "is not a regular file", "no wait for a writer")
        unlink(store.path)
        try Data(repeating: 0x41, count: StateStore.maximumSize + 1).write(to: URL(fileURLWithPath: store.path))
        XCTAssertEqual(refused(), "is larger than 256 KiB")
        XCTAssertEqual(
            store.setAside(try XCTUnwrap(refusal())).line,
            "\(store.path): is larger than 256 KiB: set aside as \(store.path).corrupt")
        XCTAssertEqual(FileManager.default.contents(atPath: store.path + ".corrupt")?.count, StateStore.maximumSize + 1)
        try Data("Interval=250\r\n".utf8).write(to: URL(fileURLWithPath: store.path))
        XCTAssertEqual(store.load().values, [.interval: "250"])
        XCTAssertNil(refused())
    }

    /// The limit covers 64 added targets and the default one with every value at its longest: what the service
    /// writes it reads back whole.
    func testTheLargestStateTheServiceCanHoldFitsAndReadsBack() throws {
        func longest(_ key: MonitorSettings.Key) -> String {
            switch key {
            case .host, .dnsProbeZone: String(repeating: "h", count: 254)
            case .checkURL, .secureCheckURL: String(repeating: "u", count: CheckURL.longest)
            case .interval: String(MonitorSettings.intervalRange.upperBound)
            case .timeout: String(MonitorSettings.timeoutRange.upperBound)
            case .failureThreshold, .recoveryThreshold: String(MonitorSettings.thresholdRange.upperBound)
            case .family: AddressFamily.allCases.map(\.rawValue).max { $0.count < $1.count } ?? ""
            case .evidence: Evidence.allCases.map(\.rawValue).max { $0.count < $1.count } ?? ""
            case .probing: Probing.allCases.map(\.rawValue).max { $0.count < $1.count } ?? ""
            case .idleInterval: String(MonitorSettings.idleIntervalRange.upperBound)
            case .checkEcho: "false"
            }
        }
        let values = Dictionary(uniqueKeysWithValues: MonitorSettings.Key.allCases.map { ($0, longest($0)) })
        var targets: [UInt32: StoredState.Values] = [0: values]
        // The largest numbers a target can have, for the longest keys.
        for offset in 0..<UInt32(MonitorContract.Targets.limit) {
            targets[MonitorContract.Targets.numbers.upperBound - offset] = values
        }
        let state = StoredState(targets: targets, nextTarget: MonitorContract.Targets.numbers.upperBound + 1)
        let text = StateStore.text(of: state)
        XCTAssertLessThanOrEqual(text.utf8.count, StateStore.maximumSize)
        print("the largest state file: \(text.utf8.count) bytes, limit \(StateStore.maximumSize)")
        let store = StateStore(directory: directory)
        try store.save(state)
        let (read, problems) = store.loadState()
        XCTAssertEqual(problems, [])
        XCTAssertEqual(read, state)
    }

    func testASaveLargerThanTheLimitIsRefusedAndLeavesTheFile() throws {
        let store = StateStore(directory: directory)
        try store.save([.interval: "250"])
        let huge = StoredState(targets: [0: [.host: String(repeating: "h", count: StateStore.maximumSize)]])
        XCTAssertThrowsError(try store.save(huge)) { XCTAssertEqual(($0 as? SystemError)?.errno, EFBIG) }
        XCTAssertEqual(store.load().values, [.interval: "250"])
    }
}
