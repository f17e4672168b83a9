import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import ProbeRules

/// What a target's driver needs of the probes' I/O: the daemon's is `ProbeTransport`; driver
/// tests bring one of their own, on a loop with a clock they advance.
public protocol ProbeTransporting: AnyObject {
    /// Told everything that arrives, in order (possibly from inside `send`).
    var onInput: (ProbeInput) -> Void { get set }
    /// Whether the core still waits for probe `sequence`.
    var isOutstanding: (UInt16) -> Bool { get set }
    var target: IPAddress? { get }
    /// The sequence slot in shared sockets (nil: sockets of its own), and the stride of slots.
    var slot: UInt16? { get }
    var stride: UInt16 { get }
    /// Sends to `address` from now on (nil: nowhere); returns how, nil when it cannot send at all.
    func retarget(_ address: IPAddress?) -> ProbeMethod?
    func send(sequence: UInt16, token: UInt64, alsoTCP: Bool)
    /// Lets go of what probes that ended still hold.
    func forgetFinished()
}

/// The probes' I/O and nothing else: the ICMP socket (its own or a slot in shared ones) and
/// the TCP connections. It sends what the core asks and turns what arrives into `ProbeInput`
/// for whoever drives the core; it decides nothing. Everything runs on the loop.
public final class ProbeTransport: ProbeTransporting {
    private let loop: MainLoop
    private let allowedMethods: Set<ProbeMethod>
    private let tcpPort: UInt16
    private var socket: ICMPSocket?
    private var socketSource: IOSource?
    /// Sockets shared with the other targets' transports, and this one's slot in them.
    private let shared: ProbeSockets?
    /// This transport's sequences are those ≡ slot mod stride (see `ProbeCore.init`).
    public private(set) var slot: UInt16?
    public var stride: UInt16 { slot == nil ? 1 : ProbeSockets.slots }
    private var tcpProbes: [UInt16: TCPProbe] = [:]
    private let tcpBudget: TCPConnectionBudget
    private let identifier: UInt16
    /// Told everything that arrives, in order.
    public var onInput: (ProbeInput) -> Void = { _ in }
    /// Whether the core still waits for probe `sequence`: the ladder's TCP answer counts only then,
    /// and connections of finished probes are closed.
    public var isOutstanding: (UInt16) -> Bool = { _ in false }
    public private(set) var target: IPAddress?

    /// The ICMP identifier our echoes carry: ours on raw sockets, the kernel's (the socket's port) on datagram ones.
    public var echoIdentifier: UInt16 { socket?.boundIdentifier ?? identifier }

    /// `sockets`: ICMP sockets shared with other transports (one per family for every target);
    /// without them, or when all their slots are taken, the transport opens its own.
    public init(
        loop: MainLoop, allowedMethods: Set<ProbeMethod> = [.icmpDatagram, .icmpRaw, .tcp], tcpPort: UInt16 = 443,
        sockets: ProbeSockets? = nil
    ) {
        self.loop = loop
        self.allowedMethods = allowedMethods
        self.tcpPort = tcpPort
        shared = sockets
        tcpBudget = sockets?.tcpConnections ?? TCPConnectionBudget()
        identifier = sockets?.identifier ?? UInt16.random(in: 1...UInt16.max)
        if let sockets {
            slot = sockets.claimSlot { [weak self] received, socket in self?.receive(received, on: socket) }
        }
    }

    deinit {
        if let socketSource { loop.remove(socketSource) }
        if let slot { shared?.release(slot) }
    }

    /// Sends to `address` from now on (nil: nowhere); returns how, nil when it cannot send at all.
    public func retarget(_ address: IPAddress?) -> ProbeMethod? {
        target = address
        tcpProbes = [:]
        guard let address else { return nil }
        let family = EchoPacket.Family(address)
        if let socket, socket.family == family { return socket.method }
        if let socketSource { loop.remove(socketSource) }
        socketSource = nil
        socket = nil
        if let shared, slot != nil {
            socket = shared.socket(for: family, allowed: allowedMethods)
            return socket?.method ?? (allowedMethods.contains(.tcp) ? .tcp : nil)
        }
        guard allowedMethods.contains(.icmpDatagram) || allowedMethods.contains(.icmpRaw),
            let opened = try? ICMPSocket(family: family, identifier: identifier), allowedMethods.contains(opened.method)
        else {
            return allowedMethods.contains(.tcp) ? .tcp : nil
        }
        socket = opened
        socketSource = try? loop.watch(fd: opened.fd, interest: .readable) { [unowned self] _ in receiveAll() }
        return opened.method
    }

    /// Closes the TCP connections of probes that ended.
    public func forgetFinished() {
        if !tcpProbes.isEmpty { tcpProbes = tcpProbes.filter { isOutstanding($0.key) } }
    }

    /// Sends probe `sequence`: an echo request, with a TCP connection beside it when `alsoTCP`;
    /// a TCP connection alone when there is no ICMP socket.
    public func send(sequence: UInt16, token: UInt64, alsoTCP: Bool) {
        guard let target else { return }
        if let socket {
            let packet = EchoPacket.request(
                family: EchoPacket.Family(target), identifier: identifier, sequence: sequence, token: token)
            // The echo first: a router that can no longer forward answers within its ICMP rate limit (one error a
            // second per destination, a small burst), and the error must go to the echo, which it proves, rather than
            // to the TCP attempt, whose error from a router is no answer.
            if let code = socket.send(packet, to: target) { return sendFailed(sequence, code) }
            if alsoTCP && allowedMethods.contains(.tcp) { connectBeside(sequence, token, to: target) }
        } else if allowedMethods.contains(.tcp) {
            let start = TCPProbe.start(loop: loop, to: target, port: tcpPort, budget: tcpBudget, held: tcpProbes.count)
            {
                [unowned self] outcome in
                tcpProbes[sequence] = nil
                let input = outcome.input(sequence: sequence, token: token, alone: true) {
                    "cannot reach \(target): \(Self.text($0))"
                }
                if let input { onInput(input) }
            }
            switch start {
            case .started(let probe): tcpProbes[sequence] = probe
            // As many connections are open as allowed, none answered yet: this probe is left to its deadline.
            case .noRoom: break
            case .failed(let code): sendFailed(sequence, code)
            }
        } else {
            sendFailed(sequence, EPERM)
        }
    }

    /// The ladder's TCP attempt beside an echo request: an accepted connection answers the
    /// probe; anything else is left to the echo (its reply, error or deadline).
    private func connectBeside(_ sequence: UInt16, _ token: UInt64, to target: IPAddress) {
        let start = TCPProbe.start(loop: loop, to: target, port: tcpPort, budget: tcpBudget, held: tcpProbes.count) {
            [unowned self] outcome in
            tcpProbes[sequence] = nil
            guard
                let input = outcome.input(
                    sequence: sequence, token: token, alone: false, outstanding: isOutstanding(sequence),
                    describe: Self.text)
            else { return }
            onInput(input)
        }
        // No room: this echo goes without a TCP attempt beside it.
        if case .started(let probe) = start { tcpProbes[sequence] = probe }
    }

    private func sendFailed(_ sequence: UInt16, _ code: Int32) {
        guard let target else { return }
        onInput(.failedSend(sequence: sequence, errno: code, reason: "cannot send to \(target): \(Self.text(code))"))
    }

    private static func text(_ code: Int32) -> String { String(cString: strerror(code)) }

    // MARK: Receiving

    private func receiveAll() {
        guard let socket else { return }
        for _ in 0..<256 {
            switch socket.receive() {
            case .nothing:
                return
            case .packet(let bytes, let source):
                let raw = socket.method == .icmpRaw
                handle(
                    EchoPacket.parse(bytes, family: socket.family, includesIPHeader: raw && socket.family == .v4),
                    from: source, socket: socket)
            case .queuedError(let error, let payload):
                guard
                    let echo = EchoPacket.echoFields(
                        payload[...], family: socket.family, type: socket.family.echoRequest)
                else {
                    onInput(.foreign)
                    continue
                }
                handleQueuedError(error, echo: echo, socket: socket)
            }
        }
    }

    /// From the shared sockets: something whose sequence is in this transport's slot.
    private func receive(_ received: ProbeSockets.Received, on socket: ICMPSocket) {
        // Only what concerns the socket this transport sends on now (a new target may have another family).
        guard socket === self.socket else { return onInput(.foreign) }
        switch received {
        case .packet(let parsed, let source): handle(parsed, from: source, socket: socket)
        case .queuedError(let error, let echo): handleQueuedError(error, echo: echo, socket: socket)
        }
    }

    private func handle(_ parsed: EchoPacket.Parsed, from source: IPAddress?, socket: ICMPSocket) {
        guard let target else { return }
        let raw = socket.method == .icmpRaw
        switch parsed {
        case .reply(let identifier, let sequence, let token):
            // On datagram sockets the kernel already matched the identifier (it is the socket's port).
            guard source == target, !raw || identifier == self.identifier else { return onInput(.foreign) }
            onInput(.reply(sequence: sequence, token: token, via: .icmp))
        case .error(let failure, let identifier, let sequence, let token, let destination):
            guard destination.elementsEqual(target.bytes), !raw || identifier == self.identifier else {
                return onInput(.foreign)
            }
            onInput(.error(sequence: sequence, token: token, failure, from: source?.description))
        case .ignored:
            onInput(.foreign)
        }
    }

    /// The queue returns the echo request we sent; its sequence and token say which probe.
    private func handleQueuedError(
        _ error: CLinux_queued_error, echo: (identifier: UInt16, sequence: UInt16, token: UInt64?),
        socket: ICMPSocket
    ) {
        guard let target else { return }
        switch error.origin {
        case CLinux_SO_EE_ORIGIN_ICMP, CLinux_SO_EE_ORIGIN_ICMP6:
            var offender: IPAddress?
            if error.has_offender != 0 {
                var storage = error.offender
                offender = withUnsafeBytes(of: &storage) { raw in
                    raw.baseAddress.flatMap { IPAddress(socketAddress: $0, length: raw.count) }
                }
            }
            // The kernel queues ICMP errors only: any other type would be a kernel's novelty, heard as unreachable.
            let failure =
                EchoPacket.Failure(family: socket.family, type: error.type, code: error.code)
                ?? .unreachable(code: error.code)
            onInput(.error(sequence: echo.sequence, token: echo.token, failure, from: offender?.description))
        default:
            let code = error.error == 0 ? EHOSTUNREACH : Int32(error.error)
            onInput(
                .refused(
                    sequence: echo.sequence, token: echo.token, reason: "cannot reach \(target): \(Self.text(code))"))
        }
    }
}
