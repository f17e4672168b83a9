import EventLoop
import NetAddress
import NetCore
import ProbeRules
import ReachabilityRules

/// Does the host really answer? `ProbeCore` driven over a `ProbeTransport` on the loop, for
/// whoever wants probes alone (the bench, the probe tests); the daemon drives the same core
/// inside its `TargetCore`. Inputs are queued while the core's outputs are carried out, so
/// the core is never entered from inside itself.
public final class ProbeEngine {
    public typealias Statistics = ProbeStatistics

    private let loop: MainLoop
    private let onReport: (ProbeReport) -> Void
    /// Called with the old and new report whenever it changes (after `onReport`).
    public var onReportChange: ((ProbeReport, ProbeReport) -> Void)?
    /// Called after every probe ends (answered, lost or refused): a verdict is in.
    public var onProbeFinished: (() -> Void)?
    private let transport: ProbeTransport
    private var core: ProbeCore
    private let wakeup: WakeupTimer
    private var inputs: [ProbeInput] = []
    private var driving = false

    public var report: ProbeReport { core.report }
    public var statistics: Statistics { core.statistics }
    public var echoIdentifier: UInt16 { transport.echoIdentifier }

    public var settings: ProbeSettings {
        get { core.settings }
        set {
            core.updateSettings(newValue, now: loop.now())
            drive()
        }
    }

    /// The address probed; a new one starts over with no verdict and probes at once.
    public var target: IPAddress? {
        get { transport.target }
        set {
            guard newValue != transport.target else { return }
            let method = transport.retarget(newValue)
            core.start(target: newValue.map(ProbeTarget.init), method: method, now: loop.now())
            drive()
        }
    }

    public init(
        loop: MainLoop, settings: ProbeSettings = ProbeSettings(),
        allowedMethods: Set<ProbeMethod> = [.icmpDatagram, .icmpRaw, .tcp], tcpPort: UInt16 = 443,
        sockets: ProbeSockets? = nil, onReport: @escaping (ProbeReport) -> Void
    ) {
        self.loop = loop
        self.onReport = onReport
        transport = ProbeTransport(loop: loop, allowedMethods: allowedMethods, tcpPort: tcpPort, sockets: sockets)
        core = ProbeCore(
            settings: settings, seed: UInt64.random(in: 0...UInt64.max), slot: transport.slot ?? 0,
            stride: transport.stride)
        wakeup = WakeupTimer(loop: loop)
        transport.onInput = { [unowned self] input in
            inputs.append(input)
            drive()
        }
        transport.isOutstanding = { [unowned self] in core.isOutstanding($0) }
        wakeup.onFire = { [unowned self] in
            core.handleTimeout(now: loop.now())
            drive()
        }
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

    private func drive() {
        guard !driving else { return }
        driving = true
        defer { driving = false }
        while true {
            let outputs = core.takeOutputs()
            if outputs.isEmpty {
                guard !inputs.isEmpty else { break }
                core.handle(inputs.removeFirst(), now: loop.now())
                continue
            }
            for output in outputs {
                switch output {
                case .send(let sequence, let token, _, _, let alsoTCP):
                    transport.send(sequence: sequence, token: token, alsoTCP: alsoTCP)
                case .probeFinished:
                    onProbeFinished?()
                case .report(let old, let new):
                    onReport(new)
                    onReportChange?(old, new)
                }
            }
        }
        transport.forgetFinished()
        wakeup.arm(at: core.nextWakeup)
    }
}
