import ProbeRules
import Timekeeping

// libFuzzer entry for the ICMP reply parser. The first byte picks the socket
// kind (IPv4 raw, IPv4 datagram, IPv6); the rest is the packet.

func echoFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let kinds: [(EchoPacket.Family, Bool)] = [(.v4, true), (.v4, false), (.v6, false)]
    let (family, withHeader) = kinds[Int(data[0]) % kinds.count]
    switch EchoPacket.parse(bytes, family: family, includesIPHeader: withHeader) {
    case .reply:
        precondition(bytes.count >= 8 + EchoPacket.payloadLength)
    case .error(_, _, _, _, let destination):
        precondition(destination.count == (family == .v4 ? 4 : 16))
    case .ignored:
        break
    }
    var tracker = ProbeTracker(firstSequence: 0)
    let sequence = tracker.send(token: 1, now: .origin, timeout: .nanoseconds(10))
    if case .reply(_, let s, let token) = EchoPacket.parse(bytes, family: family, includesIPHeader: withHeader) {
        _ = tracker.reply(sequence: s, token: token, now: Instant(nanoseconds: 5))
    }
    _ = tracker.expire(now: Instant(nanoseconds: 20))
    _ = sequence
    return 0
}
