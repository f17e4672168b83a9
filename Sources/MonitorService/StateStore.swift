import HelperProcess
import EventLoop
import Glibc
import MonitorContract

/// What the state file keeps: each target's values Set over D-Bus, by number — 0 the default
/// target, the others added ones (their numbers never reused) — and the number the next one gets.
public struct StoredState: Equatable, Sendable {
    public typealias Values = [MonitorSettings.Key: String]

    /// Every target's values, the default one (0) among them.
    public var targets: [UInt32: Values]
    /// The number the next added target gets.
    public var nextTarget: UInt32

    public init(targets: [UInt32: Values] = [:], nextTarget: UInt32 = 1) {
        self.targets = targets
        self.nextTarget = nextTarget
    }

    /// The added targets (all but 0), in the order they were added (rising numbers).
    public var added: [(number: UInt32, values: Values)] {
        targets.filter { $0.key != 0 }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}

/// The settings Set over D-Bus, kept in `<directory>/settings` as `Key=Value` lines
/// (D-Bus property names), an added target's as `Target.N.Key=Value`, and
/// `NextTarget=N`; written atomically.
///
/// The file is read as what it is: a small regular file of ours. A link, a
/// FIFO, a device or anything over `maximumSize` is refused, never followed,
/// waited on or read whole.
public struct StateStore: Sendable {
    public let directory: String
    public var path: String { directory + "/settings" }
    /// Covers 64 added targets and the default one with every value at its longest (about 170 KB: two
    /// 1,024-byte URLs, a 254-byte Host and the numbers, each), with room for what is added later: everything
    /// the service writes it can read back (StateStoreTests proves the bound).
    public static let maximumSize = 256 * 1024

    public init(directory: String) {
        self.directory = directory
    }

    /// The default target's stored values, and a line for each problem found (never fatal).
    public func load() -> (values: [MonitorSettings.Key: String], problems: [String]) {
        let (state, problems) = loadState()
        return (state.targets[0] ?? [:], problems)
    }

    /// Everything stored, and a line for each problem found (never fatal).
    public func loadState() -> (state: StoredState, problems: [String]) {
        let loaded = loaded(read())
        return (loaded.state, loaded.problems)
    }

    /// What a read of the file gave, as state and problems; `refused` when the file could not be read at
    /// all (too large, not a regular file): its state is then not the file's, and the file must be set aside,
    /// never overwritten as if it had been empty.
    public func loaded(
        _ read: Result<ArraySlice<UInt8>?, AtomicFile.Refused>
    )
        -> (state: StoredState, problems: [String], refused: AtomicFile.Refused?)
    {
        switch read {
        case .success(nil):
            return (StoredState(), [], nil)
        case .success(let bytes?):
            let parsed = Self.parse(bytes, path: path)
            return (parsed.state, parsed.problems, nil)
        case .failure(let problem):
            return (StoredState(), [], problem)
        }
    }

    /// Moves a file that could not be read out of the way (`settings.corrupt`), so that no later save writes
    /// over it; returns the log line that says so, and whether it moved (else it must not be written over).
    public func setAside(_ why: AtomicFile.Refused) -> (line: String, moved: Bool) {
        let file = AtomicFile(directory: directory, name: Self.fileName)
        let moved = file.setAside()
        return (
            "\(path): \(why): "
                + (moved
                    ? "set aside as \(path).corrupt" : "left as it is (\(SystemError("rename"))), never written over"),
            moved
        )
    }

    /// What every save fails with once the file could be neither read nor set aside: it is never written over.
    public var unreadable: SystemError {
        SystemError("\(path) could not be read, so it is never written over", errno: EACCES)
    }

    /// The highest target number any file in the directory is named for (`history.N`, set aside or not), 0 when
    /// none: a number whose history is on disk is never given to a new target, even when the state file that
    /// counted the numbers was lost.
    public func highestNumberOnDisk() -> UInt32 {
        guard let stream = opendir(directory) else { return 0 }
        defer { closedir(stream) }
        var highest: UInt32 = 0
        // Bounded: a state directory of ours holds a few files per target.
        for _ in 0..<100_000 {
            guard let entry = readdir(stream) else { break }
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0] == "history", let number = UInt32(parts[1]),
                MonitorContract.Targets.numbers.contains(number)
            else { continue }
            highest = max(highest, number)
        }
        return highest
    }

    /// The file's name in `directory`.
    public static let fileName = "settings"

    /// A state file's contents (at most `maximumSize` bytes, as read), and a line for each problem,
    /// `path` naming the file in them.
    public static func parse(_ contents: ArraySlice<UInt8>, path: String) -> (state: StoredState, problems: [String]) {
        var state = StoredState()
        var targets: [UInt32: [MonitorSettings.Key: String]] = [:]
        var problems: [String] = []
        // Split on bytes: Swift counts "\r\n" as one Character, which a split on "\n" would not see.
        for (number, bytes) in contents.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .enumerated()
        {
            let line = Substring(decoding: bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes, as: UTF8.self)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                problems.append("\(path):\(number + 1): not a setting, ignored")
                continue
            }
            let name = line[..<equals], value = String(line[line.index(after: equals)...])
            if name == "NextTarget", let next = UInt32(value), next >= 1,
                next <= MonitorContract.Targets.numbers.upperBound + 1
            {
                state.nextTarget = next
            } else if let key = MonitorSettings.Key(name: String(name)) {
                state.targets[0, default: [:]][key] = value
            } else if let (target, key) = Self.targetKey(name),
                targets.count < Self.maximumTargets || targets[target] != nil
            {
                targets[target, default: [:]][key] = value
            } else {
                problems.append("\(path):\(number + 1): not a setting, ignored")
            }
        }
        // A target is known by its Host; numbers stay below NextTarget, so none is reused.
        for (target, values) in targets.sorted(by: { $0.key < $1.key }) {
            guard values[.host] != nil else {
                problems.append("\(path): target \(target) has no Host, ignored")
                continue
            }
            state.targets[target] = values
            state.nextTarget = max(state.nextTarget, target + 1)
        }
        return (state, problems)
    }

    /// At most this many added targets are read back (the service's own limit).
    public static let maximumTargets = MonitorContract.Targets.limit

    /// `Target.N.Key` → (N, Key).
    private static func targetKey(_ name: Substring) -> (UInt32, MonitorSettings.Key)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "Target", let number = UInt32(parts[1]),
            MonitorContract.Targets.numbers.contains(number),
            let key = MonitorSettings.Key(name: String(parts[2]))
        else { return nil }
        return (number, key)
    }

    /// The file's bytes; nil when there is none.
    private func read() -> Result<ArraySlice<UInt8>?, AtomicFile.Refused> {
        AtomicFile(directory: directory, name: Self.fileName).read(maximumSize: Self.maximumSize)
    }

    /// Writes `values`: a new, uniquely named temporary file beside the real one
    /// (never an existing file or a link), fsync, rename, fsync of the directory,
    /// so a crash leaves either the old file or the new one. On failure the
    /// temporary file is removed and the old file stays as it was.
    public func save(_ values: [MonitorSettings.Key: String]) throws(SystemError) {
        try save(StoredState(targets: [0: values]))
    }

    public func save(_ state: StoredState) throws(SystemError) {
        let text = Self.text(of: state)
        guard text.utf8.count <= Self.maximumSize else { throw Self.tooLarge }
        try AtomicFile(directory: directory, name: Self.fileName).write(text)
    }

    /// What a write of more than `maximumSize` fails with: the service never writes a file it would refuse to read.
    public static let tooLarge = SystemError("writing \(fileName): more than \(maximumSize / 1024) KiB", errno: EFBIG)

    /// The file's text for `state`.
    public static func text(of state: StoredState) -> String {
        var text = "# netobserverd: settings Set over D-Bus\n"
        for key in MonitorSettings.Key.allCases {
            if let value = state.targets[0]?[key] { text += "\(key.name)=\(value)\n" }
        }
        let added = state.added
        if !added.isEmpty || state.nextTarget > 1 { text += "NextTarget=\(state.nextTarget)\n" }
        for target in added {
            for key in MonitorSettings.Key.allCases {
                if let value = target.values[key] { text += "Target.\(target.number).\(key.name)=\(value)\n" }
            }
        }
        return text
    }

}
