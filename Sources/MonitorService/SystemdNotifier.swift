import CLinux
import EventLoop
import Glibc
import Timekeeping

/// sd_notify(3) without libsystemd: datagrams to $NOTIFY_SOCKET (READY=1,
/// WATCHDOG=1, STOPPING=1, STATUS=…), and the watchdog period from $WATCHDOG_USEC.
public final class SystemdNotifier {
    private let socket: Descriptor
    private let address: sockaddr_un
    private let length: socklen_t
    /// Half of WATCHDOG_USEC, when systemd wants keep-alives from this process.
    public let watchdogPeriod: Duration?

    public init?(environment: (String) -> String? = { getenv($0).map { String(cString: $0) } }) {
        guard let path = environment("NOTIFY_SOCKET"), !path.isEmpty, path.utf8.count < 108,
            path.hasPrefix("/") || path.hasPrefix("@")
        else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        // "@name" is an abstract socket: a leading NUL instead of the '@'.
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        guard
            let opened = try? Syscall.descriptor(
                "socket(AF_UNIX)",
                {
                    Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                })
        else { return nil }
        socket = opened
        self.address = address
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let pidMatches = environment("WATCHDOG_PID").map { $0 == String(getpid()) } ?? true
        if pidMatches, let text = environment("WATCHDOG_USEC"), let microseconds = UInt64(text), microseconds > 0 {
            // Saturating: systemd's "infinity" and any other huge value mean a very long period, not a trap.
            let (nanoseconds, overflow) = microseconds.multipliedReportingOverflow(by: 1000)
            watchdogPeriod = Duration(nanoseconds: overflow ? .max : nanoseconds) / 2
        } else {
            watchdogPeriod = nil
        }
    }

    public func notify(_ state: String) {
        var address = self.address
        let bytes = Array(state.utf8)
        let fd = socket.raw, length = self.length
        _ = try? Syscall.retrying("sendto(NOTIFY_SOCKET)") {
            bytes.withUnsafeBytes { buffer in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, length)
                    }
                }
            }
        }
    }
}
