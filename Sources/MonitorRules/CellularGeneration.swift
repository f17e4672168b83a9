/// A modem's radio generation, from ModemManager's AccessTechnologies bitmask
/// (MMModemAccessTechnology): the highest generation present wins.
public enum CellularGeneration: String, Sendable, CaseIterable, Comparable {
    case g2 = "2g", g3 = "3g", g4 = "4g", g5 = "5g"

    /// Each generation's bits, as ModemManager numbers them.
    static let bits: [(CellularGeneration, UInt32)] = [
        // GSM, GSM compact, GPRS, EDGE, CDMA2000 1xRTT
        (.g2, 1 << 1 | 1 << 2 | 1 << 3 | 1 << 4 | 1 << 10),
        // UMTS, HSDPA, HSUPA, HSPA, HSPA+, EV-DO rev 0/A/B
        (.g3, 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 11 | 1 << 12 | 1 << 13),
        // LTE, LTE Cat-M, LTE NB-IoT
        (.g4, 1 << 14 | 1 << 16 | 1 << 17),
        // 5GNR (with LTE too: non-standalone 5G)
        (.g5, 1 << 15),
    ]

    /// nil for 0 (unknown), POTS alone, or bits no generation claims.
    public init?(accessTechnologies mask: UInt32) {
        guard let highest = Self.bits.last(where: { mask & $0.1 != 0 })?.0 else { return nil }
        self = highest
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}
