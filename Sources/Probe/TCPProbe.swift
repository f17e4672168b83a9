import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import ProbeRules

/// One TCP connection attempt used as a probe: an accepted connection, or one the
/// host refused with an RST, means the host answered. Linux reports a router's ICMP
/// error about the connection (a firewall's REJECT) as a refusal too, so the socket
/// asks for its error queue (IP_RECVERR): a refusal that came with an ICMP error is
/// no answer at all.
final class TCPProbe {
    private let descriptor: Descriptor
    private var source: IOSource?
    private unowned let loop: MainLoop
    /// Counted in it from a successful start until this probe is gone.
    private let budget: TCPConnectionBudget

    enum Start {
        case started(TCPProbe)
        /// The engine (holding `held`) or the service has as many connections open as allowed.
        case noRoom
        case failed(errno: Int32)
    }

    /// Starts connecting when `budget` has room for one more beside the `held` ones of this
    /// engine; `completion` runs on the loop once, unless cancelled first.
    static func start(
        loop: MainLoop, to address: IPAddress, port: UInt16, budget: TCPConnectionBudget, held: Int,
        completion: @escaping (TCPOutcome) -> Void
    ) -> Start {
        guard budget.take(holding: held) else { return .noRoom }
        guard let probe = TCPProbe(loop: loop, to: address, port: port, budget: budget, completion: completion) else {
            return .failed(errno: errno)
        }
        return .started(probe)
    }

    /// Holds one connection of `budget` (taken by `start`) until it is gone.
    private init?(
        loop: MainLoop, to address: IPAddress, port: UInt16, budget: TCPConnectionBudget,
        completion: @escaping (TCPOutcome) -> Void
    ) {
        self.loop = loop
        self.budget = budget
        guard
            let opened = try? Syscall.descriptor(
                "socket(SOCK_STREAM)",
                {
                    socket(
                        address.family,
                        Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                })
        else {
            budget.giveBack()
            return nil
        }
        descriptor = opened
        let fd = descriptor.raw
        enableErrorQueue(fd, ipv6: address.family == AF_INET6)
        let started = address.withSocketAddress(port: port) { connect(fd, $0, $1) }
        let code = started == 0 ? 0 : errno
        // An interrupted connect goes on in the background, as one in progress does.
        if started == 0 || (code != EINPROGRESS && code != EINTR) {
            // Finished at once (loopback) or failed at once: still answer from the loop.
            loop.atEndOfTurn { completion(Self.outcome(code, cameWithICMPError: false)) }
            return
        }
        source = try? loop.watch(fd: fd, interest: .writable) { [unowned self] _ in
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            let icmp = error != 0 && Self.cameWithICMPError(fd)
            cancel()
            completion(Self.outcome(error, cameWithICMPError: icmp))
        }
        if source == nil { return nil }
    }

    deinit {
        // Out of the loop before the descriptor closes (after deinit), so its number can be reused safely.
        cancel()
        budget.giveBack()
    }

    func cancel() {
        if let source { loop.remove(source) }
        source = nil
    }

    /// Whether the socket's error queue holds an ICMP error: someone on the path (or the host's
    /// own stack, by ICMP rather than TCP) spoke, not the host's TCP.
    private static func cameWithICMPError(_ fd: Int32) -> Bool {
        var queued = CLinux_queued_error()
        var payload = [UInt8](repeating: 0, count: 64)
        var found = false
        // A few entries at most (one per ICMP error the kernel queued); the queue is left empty.
        for _ in 0..<8 {
            let read = payload.withUnsafeMutableBytes {
                CLinux_read_error_queue(fd, &queued, $0.baseAddress, UInt($0.count))
            }
            guard read == 1 else { break }
            if queued.origin == UInt8(SO_EE_ORIGIN_ICMP) || queued.origin == UInt8(SO_EE_ORIGIN_ICMP6) { found = true }
        }
        return found
    }

    /// The socket's error (SO_ERROR, or connect's own) as an outcome.
    static func outcome(_ code: Int32, cameWithICMPError icmp: Bool) -> TCPOutcome {
        switch code {
        case 0: .accepted
        case _ where icmp: .icmpError(errno: code)
        case ECONNREFUSED: .reset
        case ENETUNREACH, EHOSTUNREACH, EACCES, EPERM: .localRefusal(errno: code)
        default: .failed(errno: code)
        }
    }
}
