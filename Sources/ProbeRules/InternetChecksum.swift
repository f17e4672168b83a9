/// The 16-bit one's-complement checksum of RFC 1071, as ICMPv4 uses it.
public enum InternetChecksum {
    public static func compute(_ bytes: some Collection<UInt8>) -> UInt16 {
        var sum: UInt32 = 0
        var iterator = bytes.makeIterator()
        while let high = iterator.next() {
            let low = iterator.next() ?? 0
            sum &+= UInt32(high) << 8 | UInt32(low)
        }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) &+ (sum >> 16) }
        return ~UInt16(truncatingIfNeeded: sum)
    }

    /// True when `bytes`, checksum field included, sum to all ones.
    public static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        compute(bytes) == 0
    }
}
