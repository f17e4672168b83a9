import CLinux
import Glibc

/// Asks the kernel to queue ICMP errors about what `fd` sends (IP_RECVERR / IPV6_RECVERR),
/// with the sender of each: read with CLinux_read_error_queue.
func enableErrorQueue(_ fd: Int32, ipv6: Bool) {
    var one: Int32 = 1
    if ipv6 {
        _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_RECVERR, &one, socklen_t(MemoryLayout<Int32>.size))
    } else {
        _ = setsockopt(fd, Int32(IPPROTO_IP), IP_RECVERR, &one, socklen_t(MemoryLayout<Int32>.size))
    }
}
