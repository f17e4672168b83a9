import EventLoop
import Glibc

/// A small regular file of ours in the state directory, read as what it is and written atomically.
/// A link, a FIFO, a device or anything over the size asked for is refused, never followed,
/// waited on or read whole. A write goes to a new, uniquely named temporary file beside the real
/// one (never an existing file or a link), then fsync, rename, fsync of the directory, so a crash
/// leaves either the old file or the new one; on failure the temporary file is removed and the old
/// file stays as it was.
public struct AtomicFile: Sendable {
    public let directory: String
    public let name: String
    public var path: String { directory + "/" + name }

    public init(directory: String, name: String) {
        self.directory = directory
        self.name = name
    }

    public struct Refused: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The file's bytes; nil when there is none.
    public func read(maximumSize: Int) -> Result<ArraySlice<UInt8>?, Refused> {
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
        guard status.st_size <= maximumSize else {
            return .failure(Refused(description: "is larger than \(maximumSize / 1024) KiB"))
        }
        // One byte more than allowed, to notice a file that grew after fstat.
        var buffer = [UInt8](repeating: 0, count: maximumSize + 1)
        var length = 0
        while length < buffer.count {
            let got: Int
            do throws(SystemError) {
                got = try Syscall.retrying("read") {
                    buffer[length...].withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                }
            } catch {
                return .failure(Refused(description: error.description))
            }
            if got == 0 { break }
            length += got
        }
        guard length <= maximumSize else {
            return .failure(Refused(description: "is larger than \(maximumSize / 1024) KiB"))
        }
        return .success(buffer[..<length])
    }

    public func write(_ text: String) throws(SystemError) {
        try makeDirectory(directory)
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
        do throws(SystemError) {
            try clearTheWay()
        } catch {
            unlink(temporaryName)
            throw error
        }
        guard rename(temporaryName, path) == 0 else {
            let error = SystemError("rename \(path)")
            unlink(temporaryName)
            throw error
        }
        if let dir = try? Syscall.descriptor(
            "open \(directory)", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
        {
            _ = try? Syscall.retrying("fsync \(directory)") { fsync(dir.raw) }
        }
    }

    /// What the service could not read back (anything but a regular file it can open) is never written over: it is
    /// moved aside first (`setAside`), as at start-up; a write that cannot move it fails.
    private func clearTheWay() throws(SystemError) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd >= 0 {
            defer { Glibc.close(fd) }
            var status = stat()
            if fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG { return }
        } else if errno == ENOENT {
            return
        }
        guard setAside() else {
            throw SystemError("rename \(path) aside (it cannot be read, so it is not written over)")
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
                let descriptor = try Syscall.descriptor("open \(name)") {
                    open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
                }
                return TemporaryFile(name: name, descriptor: descriptor)
            } catch  where error.errno == EEXIST {
                continue
            }
        }
        throw SystemError("open \(path).tmp-…", errno: EEXIST)
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8], name: String) throws(SystemError) {
        var rest = bytes[...]
        while !rest.isEmpty {
            let written = try Syscall.retrying("write \(name)") {
                rest.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            }
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

    /// Removes the file; false when it could not be (or was not there).
    public func remove() -> Bool {
        unlink(path) == 0
    }

    /// Moves the file aside (`<name>.corrupt`), replacing an earlier one set aside; false when it could not be.
    public func setAside() -> Bool {
        rename(path, path + ".corrupt") == 0
    }
}
