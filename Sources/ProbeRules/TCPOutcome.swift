/// What became of one TCP connection attempt used as a probe, as its socket and error
/// queue tell it (TCPProbe reads them; the simulation makes them up).
public enum TCPOutcome: Equatable, Sendable {
    /// The host accepted (SYN-ACK).
    case accepted
    /// The host's own RST (ECONNREFUSED with no ICMP error queued): it answered.
    case reset
    /// An ICMP error about the connection came first: a router, or a firewall's REJECT, spoke
    /// (Linux reports its Port Unreachable as ECONNREFUSED too). Not the host.
    case icmpError(errno: Int32)
    /// This machine refused to connect (no route, a local firewall), no ICMP involved.
    case localRefusal(errno: Int32)
    /// Anything else, a timeout included.
    case failed(errno: Int32)

    /// What the probe core hears of it. `alone`: the connection is the probe (no ICMP socket);
    /// otherwise it races an echo request, only while that probe is `outstanding`, and only an
    /// answer from the host counts. A refusal by this machine refuses the probe (`describe` words
    /// its errno); nothing else is a failure of its own: the probe's deadline counts it.
    public func input(
        sequence: UInt16, token: UInt64, alone: Bool, outstanding: Bool = true,
        describe: (Int32) -> String
    ) -> ProbeInput? {
        guard alone || outstanding else { return nil }
        return switch self {
        case .accepted, .reset:
            .reply(sequence: sequence, token: token, via: .tcp)
        case .localRefusal(let code) where alone:
            .refused(sequence: sequence, token: token, reason: describe(code))
        case .localRefusal, .icmpError, .failed:
            nil
        }
    }
}
