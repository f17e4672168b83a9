import Glibc
import NetAddress
import NetCore

/// /etc/hosts as glibc's `files` source reads it: a Host named there is resolved there, and never asks DNS, so
/// DNS truth's fresh lookup of it is that file's answer, not a question to a nameserver.
package enum HostsFile {
    package static let path = "/etc/hosts"
    /// No hosts file is read past this.
    package static let largest = 1 << 20

    /// `name`'s addresses of `family` in `text` (case and one trailing dot ignored, as the resolver does); nil when the
    /// file does not name it at all.
    package static func addresses(of name: String, family: IPFamily, in text: Substring) -> [IPAddress]? {
        let wanted = plain(name)
        var found: [IPAddress]?
        for line in text.split(separator: "\n") {
            let fields = (line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard fields.count >= 2, let address = IPAddress(String(fields[0])),
                fields.dropFirst().contains(where: { plain(String($0)) == wanted })
            else { continue }
            var list = found ?? []
            if address.ipFamily == family { list.append(address) }
            found = list
        }
        return found
    }

    /// The same, from /etc/hosts as it is now (nil also when it cannot be read).
    package static func addresses(of name: String, family: IPFamily) -> [IPAddress]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while bytes.count < largest {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return addresses(
            of: name, family: family, in: Substring(String(decoding: bytes.prefix(largest), as: UTF8.self)))
    }

    private static func plain(_ name: String) -> String {
        (name.hasSuffix(".") ? String(name.dropLast()) : name).lowercased()
    }
}
