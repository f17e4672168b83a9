import EventLoop
import Glibc
import NetCore

/// One TCP connection attempt used as a probe: an accepted or a refused
/// connection both mean the host answered.
final class TCPProbe {
    enum Result {
        case answered
        case refused(errno: Int32)
        case failed(errno: Int32)
    }

    private let descriptor: Descriptor
    private var source: IOSource?
    private unowned let loop: MainLoop

    /// Starts connecting; `completion` runs on the loop once, unless cancelled first.
    init?(loop: MainLoop, to address: IPAddress, port: UInt16, completion: @escaping (Result) -> Void) {
        self.loop = loop
        guard let opened = try? Syscall.descriptor("socket(SOCK_STREAM)", {
            socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }) else { return nil }
        descriptor = opened
        let fd = descriptor.raw
        let started = address.withSocketAddress(port: port) { connect(fd, $0, $1) }
        let code = started == 0 ? 0 : errno
        // An interrupted connect goes on in the background, as one in progress does.
        if started == 0 || (code != EINPROGRESS && code != EINTR) {
            // Finished at once (loopback) or failed at once: still answer from the loop.
            loop.atEndOfTurn { completion(Self.result(code)) }
            return
        }
        source = try? loop.watch(fd: fd, interest: .writable) { [unowned self] _ in
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            cancel()
            completion(Self.result(error))
        }
        if source == nil { return nil }
    }

    deinit {
        // Out of the loop before the descriptor closes (after deinit), so its number can be reused safely.
        cancel()
    }

    func cancel() {
        if let source { loop.remove(source) }
        source = nil
    }

    private static func result(_ code: Int32) -> Result {
        switch code {
        case 0, ECONNREFUSED: .answered
        case ENETUNREACH, EHOSTUNREACH, EACCES, EPERM: .refused(errno: code)
        default: .failed(errno: code)
        }
    }
}
