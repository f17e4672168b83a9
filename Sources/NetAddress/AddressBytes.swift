/// An address's bytes in network order, up to 16 of them, held inline: addresses are copied,
/// compared and hashed at every event of every target, and an array would be a heap object to
/// allocate, count references to and free each time.
public struct AddressBytes: RandomAccessCollection, MutableCollection, RangeReplaceableCollection, Hashable, Sendable,
    ExpressibleByArrayLiteral, CustomStringConvertible
{
    /// Bytes 0–7 and 8–15, the first byte in the top bits; the bytes past `count` are zero.
    private var high: UInt64 = 0
    private var low: UInt64 = 0
    private var length: UInt8 = 0

    public static let capacity = 16

    /// The first 16 bytes of `bytes` (an address never has more).
    public init(_ bytes: some Sequence<UInt8>) {
        var count = 0
        for byte in bytes.prefix(Self.capacity) {
            if count < 8 {
                high |= UInt64(byte) << (56 - 8 * UInt64(count))
            } else {
                low |= UInt64(byte) << (56 - 8 * UInt64(count - 8))
            }
            count += 1
        }
        length = UInt8(count)
    }

    public init(arrayLiteral bytes: UInt8...) { self.init(bytes) }

    public init() {}

    /// Rarely used (building an address in pieces): through an array.
    public mutating func replaceSubrange(_ subrange: Range<Int>, with newElements: some Collection<UInt8>) {
        var bytes = Array(self)
        bytes.replaceSubrange(subrange, with: newElements)
        precondition(bytes.count <= Self.capacity, "an address has at most \(Self.capacity) bytes, not \(bytes.count)")
        self = AddressBytes(bytes)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { Int(length) }

    public subscript(position: Int) -> UInt8 {
        get {
            precondition(position >= 0 && position < Int(length), "address byte \(position) of \(length)")
            let word = position < 8 ? high : low
            return UInt8(truncatingIfNeeded: word >> (56 - 8 * UInt64(position % 8)))
        }
        set {
            precondition(position >= 0 && position < Int(length), "address byte \(position) of \(length)")
            let shift = 56 - 8 * UInt64(position % 8)
            let cleared = ~(UInt64(0xFF) << shift)
            if position < 8 {
                high = high & cleared | UInt64(newValue) << shift
            } else {
                low = low & cleared | UInt64(newValue) << shift
            }
        }
    }

    public var description: String { "\(Array(self))" }
}
