/// ICMP echo requests and what comes back: replies, and errors that carry a
/// copy of a request. Pure: bytes in, values out; nothing here traps on input.
public enum EchoPacket {
    public enum Family: Sendable, Equatable {
        case v4, v6

        public var echoRequest: UInt8 { self == .v4 ? 8 : 128 }
        var echoReply: UInt8 { self == .v4 ? 0 : 129 }
    }

    /// Our payload: a marker, then the per-probe random token.
    public static let marker: [UInt8] = Array("netobsrv".utf8)
    public static let payloadLength = 16
    static let headerLength = 8

    /// An echo request. On IPv4 the checksum is ours to fill; on IPv6 the kernel computes it.
    public static func request(family: Family, identifier: UInt16, sequence: UInt16, token: UInt64) -> [UInt8] {
        var packet: [UInt8] = [
            family.echoRequest, 0, 0, 0,
            UInt8(identifier >> 8), UInt8(identifier & 0xFF),
            UInt8(sequence >> 8), UInt8(sequence & 0xFF),
        ]
        packet += marker
        packet += withUnsafeBytes(of: token.bigEndian) { Array($0) }
        if family == .v4 {
            let checksum = InternetChecksum.compute(packet)
            packet[2] = UInt8(checksum >> 8)
            packet[3] = UInt8(checksum & 0xFF)
        }
        return packet
    }

    /// What a received packet says about our probes.
    public enum Parsed: Equatable, Sendable {
        /// An echo reply: identifier, sequence and the token from its payload.
        case reply(identifier: UInt16, sequence: UInt16, token: UInt64)
        /// An ICMP error about an echo request we may have sent: its identifier, sequence and token
        /// (token nil when the router quoted too little of it), and where the original was going.
        case error(Failure, identifier: UInt16, sequence: UInt16, token: UInt64?, originalDestination: [UInt8])
        /// Not about us: another type, someone else's payload, a bad checksum, too short.
        case ignored(String)
    }

    public enum Failure: Equatable, Sendable {
        case unreachable(code: UInt8)
        case timeExceeded

        /// The ICMP error table, for a packet read and for one the socket's error queue reports
        /// alike: Destination Unreachable (IPv4 3, IPv6 1) with its code, Time Exceeded (IPv4 11,
        /// IPv6 3); nil for any other type.
        public init?(family: Family, type: UInt8, code: UInt8) {
            switch (family, type) {
            case (.v4, 3), (.v6, 1): self = .unreachable(code: code)
            case (.v4, 11), (.v6, 3): self = .timeExceeded
            default: return nil
            }
        }
    }

    /// Parses what a socket delivered. `includesIPHeader` is true on raw IPv4
    /// sockets, where the packet starts with the IP header (skipped by its IHL).
    public static func parse(_ bytes: [UInt8], family: Family, includesIPHeader: Bool) -> Parsed {
        var icmp = bytes[...]
        if includesIPHeader {
            guard let skipped = skipIPv4Header(icmp, expectProtocol: 1) else { return .ignored("bad IPv4 header") }
            icmp = skipped
        }
        guard icmp.count >= headerLength else { return .ignored("short ICMP packet") }
        // The kernel verifies ICMPv6 checksums; ICMPv4 on raw sockets arrives unverified.
        if family == .v4 && !InternetChecksum.isValid(icmp) { return .ignored("bad checksum") }
        let type = icmp[icmp.startIndex]
        let code = icmp[icmp.startIndex + 1]
        switch (family, type) {
        case (_, family.echoReply):
            guard code == 0 else { return .ignored("echo reply with code \(code)") }
            guard let echo = echoFields(icmp, family: family, type: family.echoReply) else {
                return .ignored("foreign echo reply")
            }
            guard let token = echo.token else { return .ignored("echo reply without our payload") }
            return .reply(identifier: echo.identifier, sequence: echo.sequence, token: token)
        default:
            guard let failure = Failure(family: family, type: type, code: code) else {
                return .ignored("ICMP type \(type)")
            }
            return quotedRequest(icmp.dropFirst(headerLength), family: family, failure: failure)
        }
    }

    /// Parses the echo request an error quotes: the original IP header, then our ICMP header and payload.
    static func quotedRequest(_ quoted: ArraySlice<UInt8>, family: Family, failure: Failure) -> Parsed {
        let icmp: ArraySlice<UInt8>
        let destination: [UInt8]
        switch family {
        case .v4:
            guard let rest = skipIPv4Header(quoted, expectProtocol: 1) else {
                return .ignored("error quoting no IPv4 ICMP")
            }
            let start = quoted.startIndex
            destination = Array(quoted[(start + 16)..<(start + 20)])
            icmp = rest
        case .v6:
            guard quoted.count >= 40, quoted[quoted.startIndex] >> 4 == 6, quoted[quoted.startIndex + 6] == 58 else {
                return .ignored("error quoting no ICMPv6")
            }
            let start = quoted.startIndex
            destination = Array(quoted[(start + 24)..<(start + 40)])
            icmp = quoted.dropFirst(40)
        }
        guard let echo = echoFields(icmp, family: family, type: family.echoRequest) else {
            return .ignored("error about another packet")
        }
        return .error(
            failure, identifier: echo.identifier, sequence: echo.sequence, token: echo.token,
            originalDestination: destination)
    }

    /// Identifier, sequence and (when the payload is ours and complete) token of an echo message.
    public static func echoFields(
        _ icmp: ArraySlice<UInt8>, family: Family, type: UInt8
    ) -> (identifier: UInt16, sequence: UInt16, token: UInt64?)? {
        guard icmp.count >= headerLength, icmp[icmp.startIndex] == type else { return nil }
        let s = icmp.startIndex
        let identifier = UInt16(icmp[s + 4]) << 8 | UInt16(icmp[s + 5])
        let sequence = UInt16(icmp[s + 6]) << 8 | UInt16(icmp[s + 7])
        let payload = icmp.dropFirst(headerLength)
        guard payload.count >= payloadLength else {
            // Routers may quote only 8 bytes of the original; a reply must carry all of ours.
            return payload.isEmpty || marker.starts(with: payload.prefix(marker.count))
                ? (identifier, sequence, nil) : nil
        }
        guard payload.prefix(marker.count).elementsEqual(marker) else { return nil }
        var token: UInt64 = 0
        for byte in payload.dropFirst(marker.count).prefix(8) { token = token << 8 | UInt64(byte) }
        return (identifier, sequence, token)
    }

    /// The bytes after an IPv4 header of the given protocol, found by its real IHL.
    static func skipIPv4Header(_ packet: ArraySlice<UInt8>, expectProtocol: UInt8) -> ArraySlice<UInt8>? {
        guard packet.count >= 20 else { return nil }
        let s = packet.startIndex
        guard packet[s] >> 4 == 4 else { return nil }
        let headerLength = Int(packet[s] & 0x0F) * 4
        guard headerLength >= 20, headerLength <= packet.count, packet[s + 9] == expectProtocol else { return nil }
        return packet.dropFirst(headerLength)
    }
}

/// 16-bit sequence arithmetic that survives wrapping (RFC 1982 style).
public enum SequenceNumber {
    /// How far `a` is after `b` (negative when before), across the wrap.
    public static func distance(from b: UInt16, to a: UInt16) -> Int {
        Int(Int16(bitPattern: a &- b))
    }
}
