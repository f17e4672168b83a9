import CLinux
import EventLoop
import Glibc
import NetCore

/// The probe settings of INTERFACE.md.
public struct ProbeSettings: Equatable, Sendable {
    public var intervalMilliseconds: UInt32
    public var timeoutMilliseconds: UInt32
    public var failureThreshold: UInt32
    public var recoveryThreshold: UInt32

    public init(intervalMilliseconds: UInt32 = 1000, timeoutMilliseconds: UInt32 = 1000,
                failureThreshold: UInt32 = 2, recoveryThreshold: UInt32 = 1) {
        self.intervalMilliseconds = intervalMilliseconds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.failureThreshold = failureThreshold
        self.recoveryThreshold = recoveryThreshold
    }
}

/// What the engine says about the host.
public struct ProbeReport: Equatable, Sendable {
    /// nil until the first verdict for the current target.
    public var answering: Bool?
    public var roundTripMicroseconds: UInt64 = 0
    public var packetLoss: Double = 0
    public var reason = ""
    public var method: ProbeMethod?

    public init(answering: Bool? = nil) {
        self.answering = answering
    }
}

/// Does the host really answer? One echo every Interval; a probe fails when no
/// valid reply arrives within Timeout; hysteresis decides answering or not.
/// Everything runs on the loop.
public final class ProbeEngine {
    public struct Statistics: Equatable, Sendable {
        public var sent = 0
        public var answered = 0
        public var lost = 0
        public var late = 0
        public var duplicates = 0
        public var foreign = 0
        public var errors = 0
        /// Follow-up probes sent because a probe was overdue.
        public var early = 0
    }

    private let loop: MainLoop
    private let onReport: (ProbeReport) -> Void
    /// Called with the old and new report whenever it changes (after `onReport`).
    public var onReportChange: ((ProbeReport, ProbeReport) -> Void)?
    private let allowedMethods: Set<ProbeMethod>
    private let tcpPort: UInt16
    private var socket: ICMPSocket?
    private var socketSource: IOSource?
    private var tcpProbes: [UInt16: TCPProbe] = [:]
    private var tracker = ProbeTracker()
    private var verdict: ProbeVerdict
    private let identifier = UInt16.random(in: 1...UInt16.max)
    private var nextProbeTimer: LoopTimer?
    private var deadlineTimer: LoopTimer?
    private var overdueTimer: LoopTimer?
    /// Smoothed round trip (RFC 6298 style, α = 1/8), nanoseconds; 0 until the first answer.
    private var smoothedRoundTrip: UInt64 = 0
    /// When a Check last forced a probe (MonotonicClock); 0 never.
    private var lastForcedProbe: UInt64 = 0
    /// The probe Checks wait for when one was forced less than a Timeout ago.
    private var deferredProbeTimer: LoopTimer?
    private var method: ProbeMethod?

    public private(set) var report = ProbeReport()
    /// The ICMP identifier our echoes carry: ours on raw sockets, the kernel's (the socket's port) on datagram ones.
    public var echoIdentifier: UInt16 { socket?.boundIdentifier ?? identifier }
    public private(set) var statistics = Statistics()
    /// Called after every probe ends (answered, lost or refused): a verdict is in.
    public var onProbeFinished: (() -> Void)?

    public var settings: ProbeSettings {
        didSet {
            verdict.failureThreshold = settings.failureThreshold
            verdict.recoveryThreshold = settings.recoveryThreshold
            // A new Interval applies from the next probe on.
            if settings.intervalMilliseconds != oldValue.intervalMilliseconds, target != nil { scheduleNextProbe() }
        }
    }

    /// The address probed; a new one starts over with no verdict and probes at once.
    public var target: IPAddress? {
        didSet {
            guard target != oldValue else { return }
            restart()
        }
    }

    public init(loop: MainLoop, settings: ProbeSettings = ProbeSettings(),
                allowedMethods: Set<ProbeMethod> = [.icmpDatagram, .icmpRaw, .tcp], tcpPort: UInt16 = 443,
                onReport: @escaping (ProbeReport) -> Void) {
        self.loop = loop
        self.settings = settings
        self.allowedMethods = allowedMethods
        self.tcpPort = tcpPort
        self.onReport = onReport
        verdict = ProbeVerdict(failureThreshold: settings.failureThreshold, recoveryThreshold: settings.recoveryThreshold)
    }

    deinit {
        stopTimers()
        if let socketSource { loop.remove(socketSource) }
    }

    /// Probes now, outside the schedule (Check, a changed route); the schedule continues from here.
    public func probeNow() {
        guard target != nil else { return }
        sendProbe()
    }

    /// A Check wants a fresh verdict. It shares a probe already in flight; else a
    /// probe is forced now, or, when one was forced within the last Timeout, once
    /// that Timeout has passed (every Check meanwhile shares it). So no number of
    /// Checks sends more than one extra probe per Timeout, and each gets a verdict
    /// from a probe sent after it arrived, within two Timeouts. Returns false when
    /// there is nothing to probe; else the verdict comes through `onProbeFinished`.
    public func probeForCheck() -> Bool {
        guard target != nil else { return false }
        if !tracker.outstanding.isEmpty || deferredProbeTimer != nil { return true }
        let now = MonotonicClock.now()
        let timeout = UInt64(settings.timeoutMilliseconds) * 1_000_000
        if lastForcedProbe == 0 || now &- lastForcedProbe >= timeout {
            forceProbe(now)
        } else {
            deferredProbeTimer = loop.schedule(after: lastForcedProbe &+ timeout &- now) { [unowned self] in
                deferredProbeTimer = nil
                if tracker.outstanding.isEmpty { forceProbe(MonotonicClock.now()) }
            }
        }
        return true
    }

    private func forceProbe(_ now: UInt64) {
        lastForcedProbe = now
        sendProbe()
    }

    /// The route came back: the next probes go back to back until the host counts as answering.
    public func routeRegained() {
        verdict.recoveringBackToBack = verdict.answering != true
        probeNow()
    }

    // MARK: Sending

    private func restart() {
        stopTimers()
        tcpProbes = [:]
        tracker.reset()
        verdict.reset()
        report = ProbeReport()
        guard let target else {
            publish()
            return
        }
        openSocket(for: target)
        publish()
        sendProbe()
    }

    private func stopTimers() {
        for timer in [nextProbeTimer, deadlineTimer, overdueTimer, deferredProbeTimer].compactMap({ $0 }) { loop.cancel(timer) }
        nextProbeTimer = nil
        deferredProbeTimer = nil
        deadlineTimer = nil
        overdueTimer = nil
        smoothedRoundTrip = 0
    }

    private func openSocket(for target: IPAddress) {
        let family = EchoPacket.Family(target)
        if let socket, socket.family == family { return }
        if let socketSource { loop.remove(socketSource) }
        socketSource = nil
        socket = nil
        guard allowedMethods.contains(.icmpDatagram) || allowedMethods.contains(.icmpRaw),
              let opened = try? ICMPSocket(family: family, identifier: identifier), allowedMethods.contains(opened.method) else {
            method = allowedMethods.contains(.tcp) ? .tcp : nil
            return
        }
        socket = opened
        method = opened.method
        socketSource = try? loop.watch(fd: opened.fd, interest: .readable) { [unowned self] _ in receiveAll() }
    }

    private func sendProbe(early: Bool = false) {
        guard let target else { return }
        let now = MonotonicClock.now()
        let token = UInt64.random(in: 0...UInt64.max)
        let sequence = tracker.send(token: token, now: now, timeout: UInt64(settings.timeoutMilliseconds) * 1_000_000, extra: early)
        statistics.sent += 1
        if !early { scheduleNextProbe() }
        armDeadline()
        if !early { watchForOverdue(sequence) }
        if let socket {
            let packet = EchoPacket.request(family: EchoPacket.Family(target), identifier: identifier, sequence: sequence, token: token)
            if let code = socket.send(packet, to: target) {
                sendFailed(sequence, code)
            }
        } else if allowedMethods.contains(.tcp) {
            let probe = TCPProbe(loop: loop, to: target, port: tcpPort) { [unowned self] result in
                tcpProbes[sequence] = nil
                switch result {
                case .answered:
                    if case .answered(_, let rtt) = tracker.reply(sequence: sequence, token: token, now: MonotonicClock.now()) {
                        statistics.answered += 1
                        noteRoundTrip(rtt)
                        finish(.answered(roundTripMicroseconds: rtt / 1000))
                    }
                case .refused(let code):
                    if tracker.error(sequence: sequence, token: token) {
                        finish(.refused(reason: "cannot reach \(target): \(String(cString: strerror(code)))"))
                    }
                case .failed:
                    break  // counted when its deadline passes
                }
            }
            if let probe { tcpProbes[sequence] = probe } else { sendFailed(sequence, errno) }
        } else {
            sendFailed(sequence, EPERM)
        }
    }

    private func sendFailed(_ sequence: UInt16, _ code: Int32) {
        guard tracker.error(sequence: sequence, token: nil), let target else { return }
        statistics.errors += 1
        if code == EAGAIN || code == ENOBUFS || code == EINTR {
            finish(.lost)
        } else {
            finish(.refused(reason: "cannot send to \(target): \(String(cString: strerror(code)))"))
        }
    }

    /// While the host answers, a probe with no reply after several round trips is
    /// probably lost: one follow-up goes out now, so that if the host is gone, the
    /// second failure is confirmed about one Timeout sooner. Both probes still get
    /// their full Timeout before they count as failed.
    private func watchForOverdue(_ sequence: UInt16) {
        if let overdueTimer { loop.cancel(overdueTimer) }
        overdueTimer = nil
        guard verdict.answering == true, smoothedRoundTrip > 0 else { return }
        let timeout = UInt64(settings.timeoutMilliseconds) * 1_000_000
        let overdue = min(max(4 * smoothedRoundTrip, 10_000_000), timeout / 2)
        overdueTimer = loop.schedule(after: overdue) { [unowned self] in
            overdueTimer = nil
            guard tracker.outstanding[sequence] != nil, verdict.answering == true,
                  tracker.outstanding.keys.allSatisfy({ SequenceNumber.distance(from: sequence, to: $0) <= 0 }) else { return }
            statistics.early += 1
            sendProbe(early: true)
        }
    }

    private func scheduleNextProbe() {
        if let nextProbeTimer { loop.cancel(nextProbeTimer) }
        nextProbeTimer = loop.schedule(after: UInt64(settings.intervalMilliseconds) * 1_000_000) { [unowned self] in
            nextProbeTimer = nil
            sendProbe()
        }
    }

    private func armDeadline() {
        if let deadlineTimer { loop.cancel(deadlineTimer) }
        deadlineTimer = nil
        guard let deadline = tracker.nextDeadline else { return }
        let now = MonotonicClock.now()
        deadlineTimer = loop.schedule(after: deadline > now ? deadline - now : 0) { [unowned self] in
            deadlineTimer = nil
            for probe in tracker.expire(now: MonotonicClock.now()) {
                tcpProbes[probe.sequence] = nil
                statistics.lost += 1
                if probe.isExtra {
                    // Its silence is the silence of the probe it was sent beside: no second failure.
                    onProbeFinished?()
                    if verdict.wantsImmediateProbe && tracker.outstanding.isEmpty { sendProbe() }
                } else {
                    finish(.lost)
                }
            }
            armDeadline()
        }
    }

    // MARK: Receiving

    private func receiveAll() {
        guard let socket else { return }
        for _ in 0..<256 {
            switch socket.receive() {
            case .nothing:
                return
            case .packet(let bytes, let source):
                handlePacket(bytes, from: source, socket: socket)
            case .queuedError(let error, let payload):
                handleQueuedError(error, payload: payload, socket: socket)
            }
        }
    }

    private func handlePacket(_ bytes: [UInt8], from source: IPAddress?, socket: ICMPSocket) {
        guard let target else { return }
        let raw = socket.method == .icmpRaw
        switch EchoPacket.parse(bytes, family: socket.family, includesIPHeader: raw && socket.family == .v4) {
        case .reply(let identifier, let sequence, let token):
            // On datagram sockets the kernel already matched the identifier (it is the socket's port).
            guard source == target, !raw || identifier == self.identifier else {
                statistics.foreign += 1
                return
            }
            switch tracker.reply(sequence: sequence, token: token, now: MonotonicClock.now()) {
            case .answered(_, let rtt):
                statistics.answered += 1
                noteRoundTrip(rtt)
                finish(.answered(roundTripMicroseconds: rtt / 1000))
            case .late:
                statistics.late += 1
                verdict.noteLateReply(timeoutMilliseconds: settings.timeoutMilliseconds)
                publish()
            case .duplicate:
                statistics.duplicates += 1
            case .foreign:
                statistics.foreign += 1
            }
        case .error(let failure, let identifier, let sequence, let token, let destination):
            guard destination == target.bytes, !raw || identifier == self.identifier,
                  tracker.error(sequence: sequence, token: token) else {
                statistics.foreign += 1
                return
            }
            statistics.errors += 1
            finish(outcome(failure, router: source, quotesWholeProbe: token != nil))
        case .ignored:
            statistics.foreign += 1
        }
    }

    private func handleQueuedError(_ error: CLinux_queued_error, payload: [UInt8], socket: ICMPSocket) {
        guard let target else { return }
        // The queue returns the echo request we sent; its sequence and token say which probe.
        guard let echo = EchoPacket.echoFields(payload[...], family: socket.family, type: socket.family.echoRequest),
              tracker.error(sequence: echo.sequence, token: echo.token) else {
            statistics.foreign += 1
            return
        }
        statistics.errors += 1
        var offender: IPAddress?
        if error.has_offender != 0 {
            var storage = error.offender
            offender = withUnsafeBytes(of: &storage) { raw in
                raw.baseAddress.flatMap { IPAddress(socketAddress: $0, length: raw.count) }
            }
        }
        switch error.origin {
        case CLinux_SO_EE_ORIGIN_ICMP, CLinux_SO_EE_ORIGIN_ICMP6:
            let timeExceeded = (socket.family == .v4 && error.type == 11) || (socket.family == .v6 && error.type == 3)
            finish(outcome(timeExceeded ? .timeExceeded : .unreachable(code: error.code), router: offender,
                           quotesWholeProbe: echo.token != nil))
        default:
            let code = error.error == 0 ? EHOSTUNREACH : Int32(error.error)
            finish(.refused(reason: "cannot reach \(target): \(String(cString: strerror(code)))"))
        }
    }

    /// An Unreachable that quotes our whole probe (its token too) ends it at once. One that
    /// quotes less proves nothing anyone who learnt the identifier and sequence could not
    /// forge, so it counts as one failed probe, like silence.
    private func outcome(_ failure: EchoPacket.Failure, router: IPAddress?, quotesWholeProbe: Bool) -> ProbeOutcome {
        let from = router.map { $0.description } ?? "a router"
        switch failure {
        case .timeExceeded:
            return .timeExceeded(from: from)
        case .unreachable where !quotesWholeProbe:
            return .unproven(from: from)
        case .unreachable(let code):
            let family = self.target.map(EchoPacket.Family.init) ?? .v4
            let target = self.target.map { $0.description } ?? "the host"
            return .refused(reason: "\(target) unreachable (\(Self.unreachableText(code, family: family))), said \(from)")
        }
    }

    static func unreachableText(_ code: UInt8, family: EchoPacket.Family) -> String {
        switch (family, code) {
        case (.v4, 0): "network unreachable"
        case (.v4, 1): "host unreachable"
        case (.v4, 2): "protocol unreachable"
        case (.v4, 3): "port unreachable"
        case (.v4, 9), (.v4, 10), (.v4, 13): "administratively prohibited"
        case (.v6, 0): "no route"
        case (.v6, 1): "administratively prohibited"
        case (.v6, 3): "address unreachable"
        case (.v6, 4): "port unreachable"
        case (.v6, 5), (.v6, 6): "rejected by policy"
        default: "code \(code)"
        }
    }

    // MARK: Verdict

    private func noteRoundTrip(_ nanoseconds: UInt64) {
        smoothedRoundTrip = smoothedRoundTrip == 0 ? nanoseconds : (7 * smoothedRoundTrip + nanoseconds) / 8
    }

    private func finish(_ outcome: ProbeOutcome) {
        verdict.record(outcome, timeoutMilliseconds: settings.timeoutMilliseconds)
        publish()
        onProbeFinished?()
        // A probe already in flight (an early follow-up) serves as the next one.
        if verdict.wantsImmediateProbe && tracker.outstanding.isEmpty { sendProbe() }
    }

    private func publish() {
        var new = report
        new.answering = verdict.answering
        new.roundTripMicroseconds = verdict.roundTripMicroseconds
        new.packetLoss = verdict.packetLoss
        new.reason = verdict.reason
        new.method = method
        guard new != report else { return }
        let old = report
        report = new
        onReport(new)
        onReportChange?(old, new)
    }
}

extension EchoPacket.Family {
    init(_ address: IPAddress) {
        self = address.family == AF_INET ? .v4 : .v6
    }
}
