import Timekeeping

/// What the network and the system said about our probes, as the transport hands it to
/// the core: one value per packet, error or outcome, in the order it came.
public enum ProbeInput: Equatable, Sendable {
    /// An echo reply with this sequence and token (`via` .icmp), or the host accepted or
    /// refused the probe's TCP connection (`via` .tcp).
    case reply(sequence: UInt16, token: UInt64, via: AnswerPath)
    /// An ICMP error quoting our probe, from `router` when the kernel said who sent it.
    case error(sequence: UInt16, token: UInt64?, EchoPacket.Failure, from: String?)
    /// The system refused the probe (a local error from the error queue, a refused connection).
    case refused(sequence: UInt16, token: UInt64?, reason: String)
    /// Sending failed; `transient` (no buffer space) counts as a lost probe, anything else as a refusal.
    case sendFailed(sequence: UInt16, transient: Bool, reason: String)
    /// Something the transport could already tell is not ours.
    case foreign

    /// EAGAIN, ENOBUFS and EINTR (Linux's numbers; ProbeRulesTests holds them to the headers): the
    /// socket's buffer was full or the call interrupted, which says nothing about the path.
    static let transientSendErrors: Set<Int32> = [11, 105, 4]

    /// A send that failed with `errno`: transient (a lost probe) or a refusal, by the rule above.
    public static func failedSend(sequence: UInt16, errno: Int32, reason: String) -> ProbeInput {
        .sendFailed(sequence: sequence, transient: transientSendErrors.contains(errno), reason: reason)
    }
}

extension ProbeCore {
    /// Takes one input from the transport.
    public mutating func handle(_ input: ProbeInput, now: Instant) {
        switch input {
        case .reply(let sequence, let token, let path):
            receiveReply(sequence: sequence, token: token, now: now, via: path)
        case .error(let sequence, let token, let failure, let router):
            receiveError(sequence: sequence, token: token, failure, from: router, now: now)
        case .refused(let sequence, let token, let reason):
            refuse(sequence: sequence, token: token, reason: reason, now: now)
        case .sendFailed(let sequence, let transient, let reason):
            sendFailed(sequence: sequence, transient: transient, reason: reason, now: now)
        case .foreign:
            countForeign()
        }
    }
}
