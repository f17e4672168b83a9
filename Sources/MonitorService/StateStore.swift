import EventLoop
import Glibc

/// The settings Set over D-Bus, kept in `<directory>/settings` as
/// `Key=Value` lines (D-Bus property names), written atomically.
public struct StateStore: Sendable {
    public let directory: String
    public var path: String { directory + "/settings" }

    public init(directory: String) {
        self.directory = directory
    }

    /// The stored values, and a line for each problem found (never fatal).
    public func load() -> (values: [MonitorSettings.Key: String], problems: [String]) {
        guard let file = fopen(path, "re") else {
            if errno == ENOENT { return ([:], []) }
            return ([:], ["cannot read \(path): \(SystemError("fopen").description), ignoring it"])
        }
        defer { fclose(file) }
        var values: [MonitorSettings.Key: String] = [:]
        var problems: [String] = []
        var line: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(line) }
        var number = 0
        while getline(&line, &capacity, file) >= 0, let line {
            number += 1
            let text = String(decoding: UnsafeRawBufferPointer(start: line, count: strlen(line)), as: UTF8.self)
                .trimmingNewline()
            if text.isEmpty || text.hasPrefix("#") { continue }
            guard let equals = text.firstIndex(of: "="),
                  let key = MonitorSettings.Key(rawValue: String(text[..<equals])) else {
                problems.append("\(path):\(number): not a setting, ignored")
                continue
            }
            values[key] = String(text[text.index(after: equals)...])
        }
        return (values, problems)
    }

    /// Writes `values`: a temporary file, fsync, rename, fsync of the directory,
    /// so a crash leaves either the old file or the new one.
    public func save(_ values: [MonitorSettings.Key: String]) throws(SystemError) {
        try makeDirectory(directory)
        var text = "# netobserverd: settings Set over D-Bus\n"
        for key in MonitorSettings.Key.allCases {
            if let value = values[key] { text += "\(key.rawValue)=\(value)\n" }
        }
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError("open \(temporary)") }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                let error = SystemError("write \(temporary)")
                close(fd)
                throw error
            }
            bytes = bytes.dropFirst(written)
        }
        guard fsync(fd) == 0 else {
            let error = SystemError("fsync \(temporary)")
            close(fd)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw SystemError("rename \(path)") }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            close(dir)
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

extension String {
    func trimmingNewline() -> String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == "\r\n" || last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
