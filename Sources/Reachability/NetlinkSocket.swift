import CLinux
import EventLoop
import Glibc

/// A netlink socket (NETLINK_ROUTE unless told otherwise): subscribe, send requests, receive
/// datagrams from the kernel only.
public final class NetlinkSocket {
    private let descriptor: Descriptor
    public var fd: Int32 { descriptor.raw }
    private var buffer: UnsafeMutableRawBufferPointer

    /// What one receive produced.
    public enum Received {
        case datagram(UnsafeRawBufferPointer)
        /// From a sender other than the kernel (nl_pid != 0), or truncated: dropped.
        case dropped
        /// Events were lost: the receive buffer overflowed (ENOBUFS), or a datagram was truncated.
        case overrun
        case wouldBlock
    }

    /// `bufferSize`: where datagrams are read (it grows past a truncated one); tests make it small.
    public init(
        protocol netlinkProtocol: Int32 = NETLINK_ROUTE, groups: UInt32, bufferSize: Int = 64 * 1024
    ) throws(SystemError) {
        descriptor = try Syscall.descriptor("socket(AF_NETLINK)") {
            socket(
                AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                netlinkProtocol)
        }
        let fd = descriptor.raw
        buffer = .allocate(byteCount: max(bufferSize, 64), alignment: 8)
        // Room for bursts; the kernel still reports an overrun if it is not enough.
        var size: Int32 = 1 << 20
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_groups = groups
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
            }
        }
        guard bound == 0 else {
            let error = SystemError("bind(AF_NETLINK)")
            buffer.deallocate()
            throw error
        }
    }

    deinit {
        buffer.deallocate()
    }

    public func send(_ request: [UInt8]) throws(SystemError) {
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        let sent = try Syscall.retrying("sendto(AF_NETLINK)") {
            request.withUnsafeBytes { bytes in
                withUnsafePointer(to: &kernel) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
        }
        guard sent == request.count else { throw SystemError("sendto(AF_NETLINK)", errno: EMSGSIZE) }
    }

    /// Receives one datagram; the returned bytes are valid until the next call.
    public func receive() -> Received {
        var sender = sockaddr_nl()
        var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var header = msghdr()
        let received = Result { () throws(SystemError) in
            try Syscall.retrying("recvmsg(AF_NETLINK)") {
                withUnsafeMutablePointer(to: &sender) { senderPointer in
                    withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        header.msg_name = UnsafeMutableRawPointer(senderPointer)
                        header.msg_namelen = socklen_t(MemoryLayout<sockaddr_nl>.size)
                        header.msg_iov = vectorPointer
                        header.msg_iovlen = 1
                        return recvmsg(fd, &header, Int32(MSG_TRUNC))
                    }
                }
            }
        }
        let count: Int
        switch received {
        case .success(let value):
            count = value
        case .failure(let error):
            return error.errno == ENOBUFS ? .overrun : .wouldBlock
        }
        // Only the kernel may speak.
        guard sender.nl_pid == 0 else { return .dropped }
        // The kernel's datagram was cut short: what it said is lost, as after ENOBUFS, so the
        // state is dumped again (into a buffer large enough next time).
        guard count <= buffer.count, header.msg_flags & Int32(MSG_TRUNC) == 0 else {
            if count > buffer.count {
                let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: min(count + 4096, 1 << 22), alignment: 8)
                buffer.deallocate()
                buffer = bigger
            }
            return .overrun
        }
        return .datagram(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }
}
