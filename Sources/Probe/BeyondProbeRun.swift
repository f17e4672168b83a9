import CLinux
import EventLoop
import Glibc
import NetAddress
import ProbeRules
import Timekeeping

/// The diagnosis's one probe past the gateway (INTERFACE.md "Diagnosis"): an echo to Host whose TTL
/// (hop limit) expires at the first router beyond the gateway, on a socket of its own that lives for
/// this probe only. A Time Exceeded from any router but the gateway that quotes this probe whole
/// (identifier, sequence and its random token) means the upstream carries packets (`.carried`); one
/// that quotes less, or another probe, proves nothing. Nothing within the limit is `.silent`. Ends
/// once, through `completion`.
public final class BeyondProbeRun {
    private let life: OneShotRun<BeyondAnswer>
    private let gateway: IPAddress
    private let family: EchoPacket.Family
    private let identifier: UInt16
    private static let sequence: UInt16 = 1
    private let token = UInt64.random(in: 0...UInt64.max)
    private var socket: ICMPSocket?

    /// How long a Time Exceeded may take to come back.
    public static let limit = Duration.seconds(1)

    public init(
        loop: MainLoop, host: IPAddress, gateway: IPAddress, hops: UInt8, completion: @escaping (BeyondAnswer) -> Void
    ) {
        life = OneShotRun(loop: loop, completion: completion)
        self.gateway = gateway
        family = host.ipFamily == .v4 ? .v4 : .v6
        identifier = UInt16.random(in: 1...UInt16.max)
        life.release = { [unowned self] in socket = nil }
        start(host: host, hops: hops)
    }

    deinit { life.abandon() }

    /// Nothing more is heard; no completion.
    public func cancel() {
        life.cancel()
    }

    private func start(host: IPAddress, hops: UInt8) {
        life.schedule(after: Self.limit) { [weak self] in self?.life.finish(.silent) }
        guard let opened = try? ICMPSocket(family: family, identifier: identifier) else {
            return
        }
        var limit = Int32(hops)
        let size = socklen_t(MemoryLayout<Int32>.size)
        let set =
            family == .v4
            ? setsockopt(opened.fd, Int32(IPPROTO_IP), IP_TTL, &limit, size)
            : setsockopt(opened.fd, Int32(IPPROTO_IPV6), IPV6_UNICAST_HOPS, &limit, size)
        guard set == 0 else { return }
        enableErrorQueue(opened.fd, ipv6: family == .v6)
        socket = opened
        life.watch(fd: opened.fd, interest: [.readable, .error]) { [weak self] _ in self?.receiveAll() }
        let packet = EchoPacket.request(family: family, identifier: identifier, sequence: Self.sequence, token: token)
        // Unsent, it can only end silent, at its deadline.
        if opened.send(packet, to: host) != nil { life.letSocketGo() }
    }

    private func receiveAll() {
        // Bounded: a socket of our own, open for one second, read at most this much per wake-up.
        for _ in 0..<64 {
            guard let socket else { return }
            switch socket.receive() {
            case .nothing:
                return
            case .queuedError(let error, let payload):
                // The payload is what the router quoted of our echo request.
                guard error.origin == CLinux_SO_EE_ORIGIN_ICMP || error.origin == CLinux_SO_EE_ORIGIN_ICMP6,
                    EchoPacket.Failure(family: family, type: error.type, code: error.code) == .timeExceeded,
                    let quoted = EchoPacket.echoFields(payload[...], family: family, type: family.echoRequest),
                    quoted.sequence == Self.sequence, quoted.token == token
                else { continue }
                var storage = error.offender
                let offender =
                    error.has_offender != 0
                    ? withUnsafeBytes(of: &storage) { raw in
                        raw.baseAddress.flatMap { IPAddress(socketAddress: $0, length: raw.count) }
                    } : nil
                if let offender, offender.unmapped != gateway.unmapped { return life.finish(.carried) }
            case .packet(let bytes, let from):
                // A raw socket also reads the error itself; a datagram socket only what the kernel matched.
                guard
                    case .error(.timeExceeded, let id, let sequence, let quotedToken, _) = EchoPacket.parse(
                        bytes, family: family, includesIPHeader: family == .v4 && socket.method == .icmpRaw),
                    id == identifier || socket.method == .icmpDatagram, sequence == Self.sequence, quotedToken == token,
                    let from, from.unmapped != gateway.unmapped
                else { continue }
                return life.finish(.carried)
            }
        }
    }
}
