import NetAddress

/// The neighbour check's packets (INTERFACE.md "The neighbour check"): an ARP request (RFC 826) for
/// IPv4 and a Neighbor Solicitation (RFC 4861) for IPv6, both to the next hop only, and the reading of
/// their answers. Pure bytes; the sockets are the driver's.
public enum NeighborPackets {
    /// Ethernet's hardware type and address length, IPv4's protocol type (ARP's fields).
    static let ethernet: UInt16 = 1
    static let ipv4: UInt16 = 0x0800
    static let arpRequest: UInt16 = 1
    static let arpReply: UInt16 = 2
    static let solicitation: UInt8 = 135
    static let advertisement: UInt8 = 136
    /// The broadcast link-layer address: where a request goes when the next hop's is not known.
    public static let broadcast: [UInt8] = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff]

    /// The 28-byte ARP request "who has `target`, tell `sender`" from `senderHardware`, addressed to
    /// `targetHardware` (zeros when unknown). nil unless both addresses are IPv4 and the hardware 6 bytes.
    public static func arpRequest(
        senderHardware: [UInt8], sender: IPAddress, targetHardware: [UInt8], target: IPAddress
    ) -> [UInt8]? {
        guard senderHardware.count == 6, targetHardware.count == 6, sender.ipFamily == .v4, target.ipFamily == .v4
        else { return nil }
        var packet: [UInt8] = []
        packet.reserveCapacity(28)
        for field in [ethernet, ipv4] { packet += [UInt8(field >> 8), UInt8(field & 0xff)] }
        packet += [6, 4, UInt8(arpRequest >> 8), UInt8(arpRequest & 0xff)]
        packet += senderHardware + sender.bytes + targetHardware + target.bytes
        return packet
    }

    /// Whether `bytes` (an ARP packet, without the link header) is a reply over Ethernet from `address` to our
    /// request: addressed to us (`ourHardware`, `ourAddress`) and, when the gateway's link-layer address was
    /// known (the request went to it), carrying that address. Opcode and sender alone prove nothing: any host
    /// on the link can send a reply naming the gateway.
    public static func isArpReply(
        _ bytes: [UInt8], from address: IPAddress, gatewayHardware: [UInt8]?,
        to ourHardware: [UInt8], _ ourAddress: IPAddress
    ) -> Bool {
        guard address.ipFamily == .v4, ourAddress.ipFamily == .v4, ourHardware.count == 6, bytes.count >= 28 else {
            return false
        }
        let header: [UInt8] = [0, UInt8(ethernet), UInt8(ipv4 >> 8), UInt8(ipv4 & 0xff), 6, 4, 0, UInt8(arpReply)]
        guard bytes[0..<8].elementsEqual(header) else { return false }
        // Sender hardware 8..<14, sender protocol 14..<18, target hardware 18..<24, target protocol 24..<28.
        if let gatewayHardware, gatewayHardware != broadcast, !bytes[8..<14].elementsEqual(gatewayHardware) {
            return false
        }
        return bytes[14..<18].elementsEqual(address.bytes) && bytes[18..<24].elementsEqual(ourHardware)
            && bytes[24..<28].elementsEqual(ourAddress.bytes)
    }

    /// A Neighbor Solicitation for `target` (the kernel fills in the checksum of raw ICMPv6 sockets),
    /// with our link-layer address as its Source Link-Layer Address option when known.
    public static func solicitation(target: IPAddress, sourceHardware: [UInt8]?) -> [UInt8]? {
        guard target.ipFamily == .v6 else { return nil }
        var packet: [UInt8] = [solicitation, 0, 0, 0, 0, 0, 0, 0] + target.bytes
        if let sourceHardware, sourceHardware.count == 6 { packet += [1, 1] + sourceHardware }
        return packet
    }

    /// Whether `bytes` (an ICMPv6 message that arrived with `hopLimit`) is a Neighbor Advertisement for
    /// `target`. RFC 4861 7.1.2: one whose hop limit is not 255 was forwarded, so it came from off the link,
    /// and proves nothing about the neighbour.
    public static func isAdvertisement(_ bytes: [UInt8], for target: IPAddress, hopLimit: Int32?) -> Bool {
        guard target.ipFamily == .v6, hopLimit == 255, bytes.count >= 24, bytes[0] == advertisement, bytes[1] == 0
        else { return false }
        return bytes[8..<24].elementsEqual(target.bytes)
    }
}
