import NetAddress
import ProbeRules

/// INTERFACE.md "Every path": how the families' verdicts make the target's headline.
extension TargetCore {
    /// The family that gives the headline, from each family's Connectivity (nil: the family is not watched):
    /// the first `full` one in resolver order; else, while any is `unknown`, the first such (the headline
    /// waits); else the best, among equals the first in order.
    public static func headline(order: [IPFamily], _ connectivity: (IPFamily) -> Connectivity?) -> IPFamily? {
        var full: IPFamily?
        var waiting: IPFamily?
        var best: (family: IPFamily, rank: Int)?
        func consider(_ family: IPFamily) {
            guard let value = connectivity(family) else { return }
            if value == .full, full == nil { full = family }
            if value == .unknown, waiting == nil { waiting = family }
            let rank = rank(value)
            if let current = best, rank <= current.rank { return }
            best = (family, rank)
        }
        // Resolver order first, then any family it did not list.
        for family in order { consider(family) }
        for family in IPFamily.allCases where !order.contains(family) { consider(family) }
        return full ?? waiting ?? best?.family
    }

    private static func rank(_ connectivity: Connectivity?) -> Int {
        switch connectivity {
        case .some(.full): 3
        case .some(.portal): 2
        case .some(.limited): 1
        case .some(.none), .some(.unknown), nil: 0
        }
    }

    /// Traffic of the target: flowing on any path is flowing; else stalled on any, idle on any.
    static func traffic(_ a: Traffic?, _ b: Traffic?) -> Traffic {
        for word in [Traffic.flowing, .stalled, .idle] where a == word || b == word { return word }
        return .none
    }
}
