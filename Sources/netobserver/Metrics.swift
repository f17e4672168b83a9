import EventLoop
import Glibc
import MonitorClientCore
import ProbeRules

/// Writes a file the way the node_exporter textfile collector needs: a temporary file in
/// the same directory (not ending in .prom), then rename(2), so a reader sees the old
/// file or the new one, never part of one. The textfile directory may be shared: the
/// temporary name is random and created exclusively (never a file or link someone
/// planted), and the file is 0644 whatever the umask.
struct TextfileWriter {
    let path: String

    struct Failure: Error {
        let message: String
    }

    func write(_ text: String) throws(Failure) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var temporary = ""
        do throws(SystemError) {
            var opened: Descriptor?
            // A clash with another file is a planted or leftover one: another random name, a few times.
            for _ in 0..<8 where opened == nil {
                temporary = (directory.isEmpty ? "" : directory + "/") + ".\(name).\(Self.randomSuffix()).tmp"
                do throws(SystemError) {
                    opened = try Syscall.descriptor("open") {
                        open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
                    }
                } catch  where error.errno == EEXIST {
                    continue
                }
            }
            guard let file = opened else { throw SystemError("open", errno: EEXIST) }
            do throws(SystemError) {
                _ = try Syscall.retrying("fchmod") { fchmod(file.raw, 0o644) }
                var rest = Array(text.utf8)[...]
                while !rest.isEmpty {
                    let written = try Syscall.retrying("write") {
                        rest.withUnsafeBytes { Glibc.write(file.raw, $0.baseAddress, $0.count) }
                    }
                    rest = rest.dropFirst(written)
                }
                try file.close()
            } catch {
                unlink(temporary)
                throw error
            }
        } catch {
            throw Failure(message: "cannot write \(temporary.isEmpty ? path : temporary): \(error)")
        }
        guard rename(temporary, path) == 0 else {
            let message = "cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))"
            unlink(temporary)
            throw Failure(message: message)
        }
    }

    /// 16 hex digits from the system's random source.
    private static func randomSuffix() -> String {
        let hex = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
