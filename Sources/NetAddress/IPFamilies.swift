/// A set of address families, held as two bits: it is read and changed at every event of every
/// target, where a `Set` would hash and allocate. Its families come out in `IPFamily.allCases` order.
public struct IPFamilies: Hashable, Sendable, Sequence, ExpressibleByArrayLiteral, CustomStringConvertible {
    private var bits: UInt8

    public init() { bits = 0 }

    public init(_ families: some Sequence<IPFamily>) {
        bits = 0
        for family in families { insert(family) }
    }

    public init(arrayLiteral families: IPFamily...) { self.init(families) }

    /// Both families.
    public static let all = IPFamilies(IPFamily.allCases)

    private static func bit(_ family: IPFamily) -> UInt8 { family == .v4 ? 1 : 2 }

    public func contains(_ family: IPFamily) -> Bool { bits & Self.bit(family) != 0 }

    public mutating func insert(_ family: IPFamily) { bits |= Self.bit(family) }

    public mutating func remove(_ family: IPFamily) { bits &= ~Self.bit(family) }

    public var isEmpty: Bool { bits == 0 }

    public var count: Int { bits.nonzeroBitCount }

    /// The families `isIncluded` keeps, as a set again.
    public func filter(_ isIncluded: (IPFamily) throws -> Bool) rethrows -> IPFamilies {
        var kept = IPFamilies()
        for family in self where try isIncluded(family) { kept.insert(family) }
        return kept
    }

    public struct Iterator: IteratorProtocol {
        fileprivate var remaining: UInt8

        public mutating func next() -> IPFamily? {
            if remaining & 1 != 0 {
                remaining &= ~1
                return .v4
            }
            if remaining & 2 != 0 {
                remaining = 0
                return .v6
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(remaining: bits) }

    public var underestimatedCount: Int { count }

    public var description: String { "[" + map(\.description).joined(separator: ", ") + "]" }
}
