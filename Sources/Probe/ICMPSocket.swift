import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import ProbeRules

/// An ICMP socket for one address family: datagram where the system allows,
/// raw otherwise.
final class ICMPSocket {
    private let descriptor: Descriptor
    var fd: Int32 { descriptor.raw }
    let family: EchoPacket.Family
    let method: ProbeMethod
    private var buffer = [UInt8](repeating: 0, count: 2048)

    /// Opens a datagram socket, else a raw one; throws the raw socket's error when neither opens.
    /// `identifier` is what this socket's echoes carry; on a raw socket the
    /// kernel then drops replies carrying any other.
    init(family: EchoPacket.Family, identifier: UInt16) throws(SystemError) {
        let domain = family == .v4 ? AF_INET : AF_INET6
        let proto = family == .v4 ? Int32(IPPROTO_ICMP) : Int32(IPPROTO_ICMPV6)
        let flags = Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        if let datagram = try? Syscall.descriptor(
            "socket(SOCK_DGRAM, ICMP)", { socket(domain, Int32(SOCK_DGRAM.rawValue) | flags, proto) })
        {
            let fd = datagram.raw
            descriptor = datagram
            method = .icmpDatagram
            // ICMP errors about our echoes arrive on the error queue.
            enableErrorQueue(fd, ipv6: family == .v6)
        } else {
            descriptor = try Syscall.descriptor("socket(SOCK_RAW, ICMP)") {
                socket(domain, Int32(SOCK_RAW.rawValue) | flags, proto)
            }
            let fd = descriptor.raw
            method = .icmpRaw
            // Raw sockets see every ICMP packet; keep only the types that can be about us.
            _ = family == .v4 ? CLinux_set_icmp_filter(fd) : CLinux_set_icmp6_filter(fd)
            _ = CLinux_attach_echo_filter(fd, family == .v4 ? 1 : 0, identifier)
        }
        self.family = family
    }

    /// The identifier the kernel gave a datagram socket (its port), once it has sent.
    var boundIdentifier: UInt16? {
        guard method == .icmpDatagram else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return nil }
        // sin_port and sin6_port sit at the same offset.
        return withUnsafeBytes(of: storage) { UInt16(bigEndian: $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) }
    }

    /// Sends; returns errno on failure.
    func send(_ packet: [UInt8], to address: IPAddress) -> Int32? {
        do throws(SystemError) {
            let sent = try Syscall.retrying("sendto") {
                packet.withUnsafeBytes { bytes in
                    address.withSocketAddress { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, $1) }
                }
            }
            return sent == packet.count ? nil : EMSGSIZE
        } catch {
            return error.errno
        }
    }

    enum Received {
        case packet([UInt8], from: IPAddress?)
        case queuedError(CLinux_queued_error, payload: [UInt8])
        case nothing
    }

    /// The next packet, else the next queued error, else nothing.
    func receive() -> Received {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let count =
            (try? Syscall.retrying("recvfrom") {
                buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                        }
                    }
                }
            }) ?? -1
        if count >= 0 {
            let source = withUnsafeBytes(of: storage) { raw in
                raw.baseAddress.flatMap { IPAddress(socketAddress: $0, length: Int(length)) }
            }
            return .packet(Array(buffer[..<count]), from: source)
        }
        var error = CLinux_queued_error()
        let queued = buffer.withUnsafeMutableBytes {
            CLinux_read_error_queue(fd, &error, $0.baseAddress, UInt($0.count))
        }
        if queued == 1 {
            return .queuedError(error, payload: Array(buffer[..<max(0, min(Int(error.payload_length), buffer.count))]))
        }
        return .nothing
    }
}
