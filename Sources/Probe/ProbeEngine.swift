import CLinux
import EventLoop
import Glibc
import NetCore

/// Does the host really answer? The driver around `ProbeCore`: it owns the ICMP
/// socket (or the TCP connections), the one timer the core asks for, and the
/// callbacks. Everything runs on the loop.
public final class ProbeEngine {
    public typealias Statistics = ProbeStatistics

    private let loop: MainLoop
    private let onReport: (ProbeReport) -> Void
    /// Called with the old and new report whenever it changes (after `onReport`).
    public var onReportChange: ((ProbeReport, ProbeReport) -> Void)?
    /// Called after every probe ends (answered, lost or refused): a verdict is in.
    public var onProbeFinished: (() -> Void)?
    private let allowedMethods: Set<ProbeMethod>
    private let tcpPort: UInt16
    private var socket: ICMPSocket?
    private var socketSource: IOSource?
    /// Sockets shared with the other targets' engines, and this engine's slot in them.
    private let shared: ProbeSockets?
    private var slot: UInt16?
    private var tcpProbes: [UInt16: TCPProbe] = [:]
    /// Shared with the other targets' engines when the sockets are.
    private let tcpBudget: TCPConnectionBudget
    private var core: ProbeCore
    private let identifier: UInt16
    private let wakeup: WakeupTimer

    public var report: ProbeReport { core.report }
    public var statistics: Statistics { core.statistics }
    /// The ICMP identifier our echoes carry: ours on raw sockets, the kernel's (the socket's port) on datagram ones.
    public var echoIdentifier: UInt16 { socket?.boundIdentifier ?? identifier }

    public var settings: ProbeSettings {
        get { core.settings }
        set {
            core.updateSettings(newValue, now: loop.now())
            drive()
        }
    }

    /// The address probed; a new one starts over with no verdict and probes at once.
    public var target: IPAddress? {
        didSet {
            guard target != oldValue else { return }
            tcpProbes = [:]
            if let target { openSocket(for: target) }
            core.start(target: target.map { ProbeTarget(name: $0.description, family: EchoPacket.Family($0)) },
                       method: method, now: loop.now())
            drive()
        }
    }
    private var method: ProbeMethod?

    /// `sockets`: ICMP sockets shared with other engines (one per family for every target);
    /// without them, or when all their slots are taken, the engine opens its own.
    public init(loop: MainLoop, settings: ProbeSettings = ProbeSettings(),
                allowedMethods: Set<ProbeMethod> = [.icmpDatagram, .icmpRaw, .tcp], tcpPort: UInt16 = 443,
                sockets: ProbeSockets? = nil, onReport: @escaping (ProbeReport) -> Void) {
        self.loop = loop
        self.allowedMethods = allowedMethods
        self.tcpPort = tcpPort
        self.onReport = onReport
        wakeup = WakeupTimer(loop: loop)
        shared = sockets
        tcpBudget = sockets?.tcpConnections ?? TCPConnectionBudget()
        identifier = sockets?.identifier ?? UInt16.random(in: 1...UInt16.max)
        core = ProbeCore(settings: settings, seed: UInt64.random(in: 0...UInt64.max))
        if let sockets, let claimed = sockets.claimSlot({ [weak self] received, socket in self?.receive(received, on: socket) }) {
            slot = claimed
            core = ProbeCore(settings: settings, seed: UInt64.random(in: 0...UInt64.max), slot: claimed, stride: ProbeSockets.slots)
        }
        wakeup.onFire = { [unowned self] in
            core.handleTimeout(now: loop.now())
            drive()
        }
    }

    deinit {
        if let socketSource { loop.remove(socketSource) }
        if let slot { shared?.release(slot) }
    }

    /// Probes now, outside the schedule (a changed route); the schedule continues from here.
    public func probeNow() {
        core.probeNow(now: loop.now())
        drive()
    }

    /// A Check wants a fresh verdict (see `ProbeCore.check`). Returns false when there is
    /// nothing to probe; else the verdict comes through `onProbeFinished`.
    public func probeForCheck() -> Bool {
        let probing = core.check(now: loop.now())
        drive()
        return probing
    }

    /// The route came back: the next probes go back to back until the host counts as answering.
    public func routeRegained() {
        core.routeRegained(now: loop.now())
        drive()
    }

    // MARK: Carrying out what the core asks

    private func drive() {
        while case let outputs = core.takeOutputs(), !outputs.isEmpty {
            for output in outputs {
                switch output {
                case .send(let sequence, let token, _, _, let alsoTCP):
                    transmit(sequence, token, alsoTCP: alsoTCP)
                case .probeFinished:
                    onProbeFinished?()
                case .report(let old, let new):
                    onReport(new)
                    onReportChange?(old, new)
                }
            }
        }
        if !tcpProbes.isEmpty { tcpProbes = tcpProbes.filter { core.isOutstanding($0.key) } }
        wakeup.arm(at: core.nextWakeup)
    }

    private func openSocket(for target: IPAddress) {
        let family = EchoPacket.Family(target)
        if let socket, socket.family == family { return }
        if let socketSource { loop.remove(socketSource) }
        socketSource = nil
        socket = nil
        if let shared, slot != nil {
            socket = shared.socket(for: family, allowed: allowedMethods)
            method = socket?.method ?? (allowedMethods.contains(.tcp) ? .tcp : nil)
            return
        }
        guard allowedMethods.contains(.icmpDatagram) || allowedMethods.contains(.icmpRaw),
              let opened = try? ICMPSocket(family: family, identifier: identifier), allowedMethods.contains(opened.method) else {
            method = allowedMethods.contains(.tcp) ? .tcp : nil
            return
        }
        socket = opened
        method = opened.method
        socketSource = try? loop.watch(fd: opened.fd, interest: .readable) { [unowned self] _ in receiveAll() }
    }

    private func transmit(_ sequence: UInt16, _ token: UInt64, alsoTCP: Bool) {
        guard let target else { return }
        if let socket {
            let packet = EchoPacket.request(family: EchoPacket.Family(target), identifier: identifier, sequence: sequence, token: token)
            if alsoTCP && allowedMethods.contains(.tcp) { connectBeside(sequence, token, to: target) }
            if let code = socket.send(packet, to: target) { sendFailed(sequence, code) }
        } else if allowedMethods.contains(.tcp) {
            let start = TCPProbe.start(loop: loop, to: target, port: tcpPort, budget: tcpBudget, held: tcpProbes.count) {
                [unowned self] result in
                tcpProbes[sequence] = nil
                switch result {
                case .answered:
                    core.receiveReply(sequence: sequence, token: token, now: loop.now(), via: .tcp)
                case .refused(let code):
                    core.refuse(sequence: sequence, token: token, reason: "cannot reach \(target): \(Self.text(code))", now: loop.now())
                case .failed:
                    break  // counted when its deadline passes
                }
                drive()
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

    /// The ladder's TCP attempt beside an echo request: an accepted or refused connection
    /// answers the probe; anything else is left to the echo (its reply, error or deadline).
    private func connectBeside(_ sequence: UInt16, _ token: UInt64, to target: IPAddress) {
        let start = TCPProbe.start(loop: loop, to: target, port: tcpPort, budget: tcpBudget, held: tcpProbes.count) {
            [unowned self] result in
            tcpProbes[sequence] = nil
            guard case .answered = result, core.isOutstanding(sequence) else { return }
            core.receiveReply(sequence: sequence, token: token, now: loop.now(), via: .tcp)
            drive()
        }
        // No room: this echo goes without a TCP attempt beside it.
        if case .started(let probe) = start { tcpProbes[sequence] = probe }
    }

    private func sendFailed(_ sequence: UInt16, _ code: Int32) {
        guard let target else { return }
        core.sendFailed(sequence: sequence, transient: code == EAGAIN || code == ENOBUFS || code == EINTR,
                        reason: "cannot send to \(target): \(Self.text(code))", now: loop.now())
    }

    private static func text(_ code: Int32) -> String { String(cString: strerror(code)) }

    // MARK: Receiving

    private func receiveAll() {
        guard let socket else { return }
        for _ in 0..<256 {
            switch socket.receive() {
            case .nothing:
                drive()
                return
            case .packet(let bytes, let source):
                let raw = socket.method == .icmpRaw
                handle(EchoPacket.parse(bytes, family: socket.family, includesIPHeader: raw && socket.family == .v4),
                       from: source, socket: socket)
            case .queuedError(let error, let payload):
                guard let echo = EchoPacket.echoFields(payload[...], family: socket.family, type: socket.family.echoRequest) else {
                    core.countForeign()
                    continue
                }
                handleQueuedError(error, echo: echo, socket: socket)
            }
        }
        drive()
    }

    /// From the shared sockets: something whose sequence is in this engine's slot.
    private func receive(_ received: ProbeSockets.Received, on socket: ICMPSocket) {
        // Only what concerns the socket this engine sends on now (a new target may have another family).
        guard socket === self.socket else { return core.countForeign() }
        switch received {
        case .packet(let parsed, let source): handle(parsed, from: source, socket: socket)
        case .queuedError(let error, let echo): handleQueuedError(error, echo: echo, socket: socket)
        }
        drive()
    }

    private func handle(_ parsed: EchoPacket.Parsed, from source: IPAddress?, socket: ICMPSocket) {
        guard let target else { return }
        let raw = socket.method == .icmpRaw
        let now = loop.now()
        switch parsed {
        case .reply(let identifier, let sequence, let token):
            // On datagram sockets the kernel already matched the identifier (it is the socket's port).
            guard source == target, !raw || identifier == self.identifier else { return core.countForeign() }
            core.receiveReply(sequence: sequence, token: token, now: now)
        case .error(let failure, let identifier, let sequence, let token, let destination):
            guard destination == target.bytes, !raw || identifier == self.identifier else { return core.countForeign() }
            core.receiveError(sequence: sequence, token: token, failure, from: source?.description, now: now)
        case .ignored:
            core.countForeign()
        }
    }

    /// The queue returns the echo request we sent; its sequence and token say which probe.
    private func handleQueuedError(_ error: CLinux_queued_error, echo: (identifier: UInt16, sequence: UInt16, token: UInt64?),
                                   socket: ICMPSocket) {
        guard let target else { return }
        let now = loop.now()
        switch error.origin {
        case CLinux_SO_EE_ORIGIN_ICMP, CLinux_SO_EE_ORIGIN_ICMP6:
            var offender: IPAddress?
            if error.has_offender != 0 {
                var storage = error.offender
                offender = withUnsafeBytes(of: &storage) { raw in
                    raw.baseAddress.flatMap { IPAddress(socketAddress: $0, length: raw.count) }
                }
            }
            let timeExceeded = (socket.family == .v4 && error.type == 11) || (socket.family == .v6 && error.type == 3)
            core.receiveError(sequence: echo.sequence, token: echo.token,
                              timeExceeded ? .timeExceeded : .unreachable(code: error.code),
                              from: offender?.description, now: now)
        default:
            let code = error.error == 0 ? EHOSTUNREACH : Int32(error.error)
            core.refuse(sequence: echo.sequence, token: echo.token, reason: "cannot reach \(target): \(Self.text(code))", now: now)
        }
    }
}

extension EchoPacket.Family {
    init(_ address: IPAddress) {
        self = address.family == AF_INET ? .v4 : .v6
    }
}
