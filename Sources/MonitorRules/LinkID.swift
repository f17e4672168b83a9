import ReachabilityRules

/// One network link as long as it lives: the kernel's interface index, and a generation that tells a link apart
/// from an earlier one that had the same index (a deleted link's index may be given again).
public struct LinkID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var index: Int32
    public var generation: UInt32

    public init(index: Int32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }

    public static func < (a: LinkID, b: LinkID) -> Bool {
        (a.index, a.generation) < (b.index, b.generation)
    }

    public var description: String { "link \(index).\(generation)" }
}

/// What a target's path reads of the link its route uses: the link, its name now (for show, and to match the
/// route's Interface), what the services and the network's captive-portal API say of it, and the NAT64 prefix its
/// routers advertise. One reference, as every path's core holds one and cores are copied whole.
public struct LinkView: Equatable, Sendable {
    private final class Storage: Sendable {
        let id: LinkID
        let name: String
        let facts: LinkFacts
        let nat64Prefix: Nat64Prefix?

        init(id: LinkID, name: String, facts: LinkFacts, nat64Prefix: Nat64Prefix?) {
            self.id = id
            self.name = name
            self.facts = facts
            self.nat64Prefix = nat64Prefix
        }
    }

    private let storage: Storage

    public init(id: LinkID, name: String, facts: LinkFacts = LinkFacts(), nat64Prefix: Nat64Prefix? = nil) {
        storage = Storage(id: id, name: name, facts: facts, nat64Prefix: nat64Prefix)
    }

    public var id: LinkID { storage.id }
    public var name: String { storage.name }
    public var facts: LinkFacts { storage.facts }
    /// The NAT64 prefix the link's routers advertise (RFC 8781); nil when none.
    public var nat64Prefix: Nat64Prefix? { storage.nat64Prefix }

    public static func == (a: LinkView, b: LinkView) -> Bool {
        a.storage === b.storage
            || (a.id == b.id && a.name == b.name && a.facts == b.facts && a.nat64Prefix == b.nat64Prefix)
    }

    /// `link` when it is the one named `interface` ("" names none): what a route over `interface` reads of it.
    public static func of(_ link: LinkView?, on interface: String) -> LinkView? {
        guard let link, !interface.isEmpty, link.name == interface else { return nil }
        return link
    }

    /// The facts of `link` when it is the one named `interface`.
    public static func facts(of link: LinkView?, on interface: String) -> LinkFacts? {
        of(link, on: interface)?.facts
    }
}
