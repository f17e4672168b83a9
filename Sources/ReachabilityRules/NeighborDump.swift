import NetAddress

/// The kernel's neighbour table (RTM_GETNEIGH), read for one entry: the next hop's last known
/// link-layer address, which the neighbour check's unicast ARP request goes to. Bytes in, a value
/// out, walked by hand (no C macro): nothing here traps on what a socket delivered.
public enum NeighborDump {
    static let getNeighbors: UInt16 = 30        // RTM_GETNEIGH
    static let newNeighbor: UInt16 = 28         // RTM_NEWNEIGH
    static let done: UInt16 = 3                 // NLMSG_DONE
    static let error: UInt16 = 2                // NLMSG_ERROR
    static let destination: UInt16 = 1          // NDA_DST
    static let linkAddress: UInt16 = 2          // NDA_LLADDR
    static let incomplete: UInt16 = 0x01        // NUD_INCOMPLETE
    static let failed: UInt16 = 0x20            // NUD_FAILED
    static let requestFlags: UInt16 = 0x1 | 0x300  // NLM_F_REQUEST | NLM_F_DUMP

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
    public static func hardwareAddress(of address: IPAddress, interfaceIndex: Int32, in bytes: [UInt8]) -> (address: [UInt8]?, ended: Bool) {
        var offset = 0
        var found: [UInt8]?
        while offset + 16 <= bytes.count {
            let length = Int(read32(bytes, offset))
            let type = read16(bytes, offset + 4)
            guard length >= 16, offset + length <= bytes.count else { break }
            if type == done || type == error { return (found, true) }
            if type == newNeighbor, length >= 28, read32(bytes, offset + 20) == UInt32(bitPattern: interfaceIndex),
               let entry = entry(bytes, from: offset + 28, to: offset + length), entry.destination == address.bytes {
                let state = read16(bytes, offset + 24)
                if state & (incomplete | failed) == 0, let link = entry.link, link.count == 6, link != [0, 0, 0, 0, 0, 0] { found = link }
            }
            offset += (length + 3) & ~3
        }
        return (found, false)
    }

    /// NDA_DST and NDA_LLADDR of one message's attributes.
    private static func entry(_ bytes: [UInt8], from start: Int, to end: Int) -> (destination: [UInt8]?, link: [UInt8]?)? {
        var offset = start
        var destination: [UInt8]?
        var link: [UInt8]?
        while offset + 4 <= end {
            let length = Int(read16(bytes, offset))
            let type = read16(bytes, offset + 2) & 0x3fff
            guard length >= 4, offset + length <= end else { return nil }
            let value = Array(bytes[(offset + 4)..<(offset + length)])
            if type == Self.destination { destination = value }
            if type == linkAddress { link = value }
            offset += (length + 3) & ~3
        }
        return (destination, link)
    }

    private static func read16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
    }
    private static func read32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) }
    }
}
