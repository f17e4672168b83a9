import NetAddress

/// The kernel's neighbour table (RTM_GETNEIGH), read for one entry: the next hop's last known
/// link-layer address, which the neighbour check's unicast ARP request goes to. Bytes in, a value
/// out, walked by hand (no C macro): nothing here traps on what a socket delivered.
public enum NeighborDump {
    static let getNeighbors: UInt16 = 30 // RTM_GETNEIGH
    static let newNeighbor: UInt16 = 28 // RTM_NEWNEIGH
    static let done: UInt16 = 3 // NLMSG_DONE
    static let error: UInt16 = 2 // NLMSG_ERROR
    static let destination: UInt16 = 1 // NDA_DST
    static let linkAddress: UInt16 = 2 // NDA_LLADDR
    static let incomplete: UInt16 = 0x01 // NUD_INCOMPLETE
    static let failed: UInt16 = 0x20 // NUD_FAILED
    static let requestFlags: UInt16 = 0x1 | 0x300 // NLM_F_REQUEST | NLM_F_DUMP

    /// A dump request for `family`'s neighbours (struct nlmsghdr, then struct ndmsg), in the host's byte order.
    public static func request(family: Int32, sequence: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value) { bytes += $0 } }
        append(UInt32(28))
        append(getNeighbors)
        append(requestFlags)
        append(sequence)
        append(UInt32(0))
        bytes += [UInt8(truncatingIfNeeded: family), 0, 0, 0]
        append(Int32(0))
        append(UInt16(0))
        bytes += [0, 0]
        return bytes
    }

    /// What one read of the dump gave: the address kept for `address` on `interfaceIndex` (nil when the read
    /// has none, or only one being resolved or failed), and whether the dump ended in it.
    public static func hardwareAddress(
        of address: IPAddress, interfaceIndex: Int32, in bytes: [UInt8]
    ) -> (address: [UInt8]?, ended: Bool) {
        var found: [UInt8]?
        var ended = false
        _ = bytes.withUnsafeBytes { buffer in
            NetlinkParser.messages(in: buffer) { type, _, data in
                guard !ended else { return }
                if type == done || type == error { return ended = true }
                // struct ndmsg: family, pads, index (32), state (16), flags, type; then the attributes.
                guard type == newNeighbor, data.count >= 12,
                    data.loadUnaligned(fromByteOffset: 4, as: Int32.self) == interfaceIndex,
                    let entry = entry(UnsafeRawBufferPointer(rebasing: data[12...])),
                    entry.destination?.elementsEqual(address.bytes) == true
                else { return }
                let state = data.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
                if state & (incomplete | failed) == 0, let link = entry.link, link.count == 6,
                    link != [0, 0, 0, 0, 0, 0]
                {
                    found = link
                }
            }
        }
        return (found, ended)
    }

    /// NDA_DST and NDA_LLADDR of one message's attributes; nil when they do not tile.
    private static func entry(_ attributes: UnsafeRawBufferPointer) -> (destination: [UInt8]?, link: [UInt8]?)? {
        var destination: [UInt8]?
        var link: [UInt8]?
        let tiled = NetlinkParser.attributes(in: attributes) { type, value in
            if type == Self.destination { destination = Array(value) }
            if type == linkAddress { link = Array(value) }
            return true
        }
        return tiled ? (destination, link) : nil
    }
}
