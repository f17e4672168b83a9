import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import ProbeRules

/// One ICMP socket per address family for every target's probe engine. Each engine
/// gets a slot; its sequence numbers are those ≡ slot (mod `slots`), so what comes
/// back (a reply, an ICMP error, a queued error) is handed to the engine whose slot
/// the sequence is in. The engine still checks source, token and the rest.
public final class ProbeSockets {
    /// Engines one set of sockets serves (a target has one per family); 256 sequence numbers each.
    public static let slots: UInt16 = 256

    private let loop: MainLoop
    /// What raw sockets' echoes carry (datagram sockets get the kernel's, their port).
    public let identifier = UInt16.random(in: 1...UInt16.max)
    private var sockets: [EchoPacket.Family: (socket: ICMPSocket, source: IOSource)] = [:]
    private var receivers: [UInt16: Receiver] = [:]
    /// Packets and errors for no engine: someone else's, or forged.
    public private(set) var foreign = 0
    /// The TCP probe connections of every engine these sockets serve.
    public let tcpConnections = TCPConnectionBudget()

    /// What an engine is handed: a parsed packet with its source, or a queued error.
    public enum Received {
        case packet(EchoPacket.Parsed, from: IPAddress?)
        case queuedError(CLinux_queued_error, echo: (identifier: UInt16, sequence: UInt16, token: UInt64?))
    }

    typealias Receiver = (Received, ICMPSocket) -> Void

    public init(loop: MainLoop) {
        self.loop = loop
    }

    deinit {
        for entry in sockets.values { loop.remove(entry.source) }
    }

    /// A free slot, or nil when all are taken (the engine then opens sockets of its own).
    func claimSlot(_ receiver: @escaping Receiver) -> UInt16? {
        guard let slot = (0..<Self.slots).first(where: { receivers[$0] == nil }) else { return nil }
        receivers[slot] = receiver
        return slot
    }

    func release(_ slot: UInt16) {
        receivers[slot] = nil
    }

    /// The socket for `family`, opened the first time it is asked for; nil when none opens.
    func socket(for family: EchoPacket.Family, allowed: Set<ProbeMethod>) -> ICMPSocket? {
        if let entry = sockets[family] { return allowed.contains(entry.socket.method) ? entry.socket : nil }
        guard let opened = try? ICMPSocket(family: family, identifier: identifier), allowed.contains(opened.method),
            let source = try? loop.watch(
                fd: opened.fd, interest: .readable, handler: { [unowned self] _ in receiveAll(family) })
        else { return nil }
        sockets[family] = (opened, source)
        return opened
    }

    private func receiveAll(_ family: EchoPacket.Family) {
        guard let socket = sockets[family]?.socket else { return }
        let raw = socket.method == .icmpRaw
        for _ in 0..<256 {
            switch socket.receive() {
            case .nothing:
                return
            case .packet(let bytes, let source):
                let parsed = EchoPacket.parse(bytes, family: family, includesIPHeader: raw && family == .v4)
                switch parsed {
                case .reply(let id, let sequence, _), .error(_, let id, let sequence, _, _):
                    guard !raw || id == identifier, let receiver = receivers[sequence % Self.slots] else {
                        foreign += 1
                        continue
                    }
                    receiver(.packet(parsed, from: source), socket)
                case .ignored:
                    foreign += 1
                }
            case .queuedError(let error, let payload):
                guard let echo = EchoPacket.echoFields(payload[...], family: family, type: family.echoRequest),
                    let receiver = receivers[echo.sequence % Self.slots]
                else {
                    foreign += 1
                    continue
                }
                receiver(.queuedError(error, echo: echo), socket)
            }
        }
    }
}
