import EventLoop
import Glibc
import MonitorContract

/// What the state file keeps: the default target's values Set over D-Bus, and the added
/// targets (their numbers, never reused, and the values Set on each).
public struct StoredState: Equatable, Sendable {
    public struct Target: Equatable, Sendable {
        public var number: UInt32
        public var values: [MonitorSettings.Key: String]

        public init(number: UInt32, values: [MonitorSettings.Key: String]) {
            self.number = number
            self.values = values
        }
    }

    public var values: [MonitorSettings.Key: String]
    /// In the order they were added (rising numbers).
    public var targets: [Target]
    /// The number the next added target gets.
    public var nextTarget: UInt32

    public init(values: [MonitorSettings.Key: String] = [:], targets: [Target] = [], nextTarget: UInt32 = 1) {
        self.values = values
        self.targets = targets
        self.nextTarget = nextTarget
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
    public static let maximumSize = 64 * 1024

    public init(directory: String) {
        self.directory = directory
    }

    /// The default target's stored values, and a line for each problem found (never fatal).
    public func load() -> (values: [MonitorSettings.Key: String], problems: [String]) {
        let (state, problems) = loadState()
        return (state.values, problems)
    }

    /// Everything stored, and a line for each problem found (never fatal).
    public func loadState() -> (state: StoredState, problems: [String]) {
        let contents: ArraySlice<UInt8>
        switch read() {
        case .success(nil): return (StoredState(), [])
        case .success(let bytes?): contents = bytes
        case .failure(let problem): return (StoredState(), ["\(path): \(problem), ignoring it"])
        }
        return Self.parse(contents, path: path)
    }

    /// A state file's contents (at most `maximumSize` bytes, as read), and a line for each problem,
    /// `path` naming the file in them.
    public static func parse(_ contents: ArraySlice<UInt8>, path: String) -> (state: StoredState, problems: [String]) {
        var state = StoredState()
        var targets: [UInt32: [MonitorSettings.Key: String]] = [:]
        var problems: [String] = []
        // Split on bytes: Swift counts "\r\n" as one Character, which a split on "\n" would not see.
        for (number, bytes) in contents.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let line = Substring(decoding: bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes, as: UTF8.self)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                problems.append("\(path):\(number + 1): not a setting, ignored")
                continue
            }
            let name = line[..<equals], value = String(line[line.index(after: equals)...])
            if name == "NextTarget", let next = UInt32(value), next >= 1, next <= MonitorContract.Targets.numbers.upperBound + 1 {
                state.nextTarget = next
            } else if let key = MonitorSettings.Key(name: String(name)) {
                state.values[key] = value
            } else if let (target, key) = Self.targetKey(name), targets.count < Self.maximumTargets || targets[target] != nil {
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
            state.targets.append(StoredState.Target(number: target, values: values))
            state.nextTarget = max(state.nextTarget, target + 1)
        }
        return (state, problems)
    }

    /// At most this many added targets are read back (the service's own limit).
    public static let maximumTargets = MonitorContract.Targets.limit

    /// `Target.N.Key` → (N, Key).
    private static func targetKey(_ name: Substring) -> (UInt32, MonitorSettings.Key)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "Target", let number = UInt32(parts[1]), MonitorContract.Targets.numbers.contains(number),
              let key = MonitorSettings.Key(name: String(parts[2])) else { return nil }
        return (number, key)
    }

    private struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    /// The file's bytes; nil when there is none.
    private func read() -> Result<ArraySlice<UInt8>?, Refused> {
        let file: Descriptor
        do throws(SystemError) {
            file = try Syscall.descriptor("open") { open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        } catch {
            switch error.errno {
            case ENOENT: return .success(nil)
            case ELOOP: return .failure(Refused(description: "is a symbolic link"))
            default: return .failure(Refused(description: error.description))
            }
        }
        let fd = file.raw
        var status = stat()
        guard fstat(fd, &status) == 0 else { return .failure(Refused(description: SystemError("fstat").description)) }
        guard status.st_mode & S_IFMT == S_IFREG else { return .failure(Refused(description: "is not a regular file")) }
        guard status.st_size <= Self.maximumSize else {
            return .failure(Refused(description: "is larger than \(Self.maximumSize / 1024) KiB"))
        }
        // One byte more than allowed, to notice a file that grew after fstat.
        var buffer = [UInt8](repeating: 0, count: Self.maximumSize + 1)
        var length = 0
        while length < buffer.count {
            let got: Int
            do throws(SystemError) {
                got = try Syscall.retrying("read") { buffer[length...].withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            } catch {
                return .failure(Refused(description: error.description))
            }
            if got == 0 { break }
            length += got
        }
        guard length <= Self.maximumSize else {
            return .failure(Refused(description: "is larger than \(Self.maximumSize / 1024) KiB"))
        }
        return .success(buffer[..<length])
    }

    /// Writes `values`: a new, uniquely named temporary file beside the real one
    /// (never an existing file or a link), fsync, rename, fsync of the directory,
    /// so a crash leaves either the old file or the new one. On failure the
    /// temporary file is removed and the old file stays as it was.
    public func save(_ values: [MonitorSettings.Key: String]) throws(SystemError) {
        try save(StoredState(values: values))
    }

    public func save(_ state: StoredState) throws(SystemError) {
        try makeDirectory(directory)
        var text = "# netobserverd: settings Set over D-Bus\n"
        for key in MonitorSettings.Key.allCases {
            if let value = state.values[key] { text += "\(key.name)=\(value)\n" }
        }
        if !state.targets.isEmpty || state.nextTarget > 1 { text += "NextTarget=\(state.nextTarget)\n" }
        for target in state.targets {
            for key in MonitorSettings.Key.allCases {
                if let value = target.values[key] { text += "Target.\(target.number).\(key.name)=\(value)\n" }
            }
        }
        let temporary = try createTemporary()
        let name = temporary.name
        do throws(SystemError) {
            try writeAll(temporary.descriptor.raw, Array(text.utf8), name: name)
            try Syscall.retrying("fsync \(name)") { fsync(temporary.descriptor.raw) }
            try temporary.close()
        } catch {
            unlink(name)
            throw error
        }
        let temporaryName = name
        guard rename(temporaryName, path) == 0 else {
            let error = SystemError("rename \(path)")
            unlink(temporaryName)
            throw error
        }
        if let dir = try? Syscall.descriptor("open \(directory)", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
            _ = try? Syscall.retrying("fsync \(directory)") { fsync(dir.raw) }
        }
    }

    /// A new file beside the real one, open for writing.
    private struct TemporaryFile: ~Copyable {
        let name: String
        let descriptor: Descriptor

        consuming func close() throws(SystemError) {
            let name = self.name
            do throws(SystemError) {
                try descriptor.close()
            } catch {
                throw SystemError("close \(name)", errno: error.errno)
            }
        }
    }

    private func createTemporary() throws(SystemError) -> TemporaryFile {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<16 {
            let name = path + ".tmp-" + String(generator.next() as UInt64, radix: 36)
            do throws(SystemError) {
                let descriptor = try Syscall.descriptor("open \(name)") { open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644) }
                return TemporaryFile(name: name, descriptor: descriptor)
            } catch where error.errno == EEXIST {
                continue
            }
        }
        throw SystemError("open \(path).tmp-…", errno: EEXIST)
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8], name: String) throws(SystemError) {
        var rest = bytes[...]
        while !rest.isEmpty {
            let written = try Syscall.retrying("write \(name)") { rest.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
            rest = rest.dropFirst(written)
        }
    }

    private func makeDirectory(_ path: String) throws(SystemError) {
        var current = ""
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0 && errno != EEXIST { throw SystemError("mkdir \(current)") }
        }
    }
}
