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
/// route's Interface), and what the services and the network's captive-portal API say of it. One reference, as
/// every path's core holds one and cores are copied whole.
public struct LinkView: Equatable, Sendable {
    private final class Storage: Sendable {
        let id: LinkID
        let name: String
        let facts: LinkFacts

        init(id: LinkID, name: String, facts: LinkFacts) {
            self.id = id
            self.name = name
            self.facts = facts
        }
    }

    private let storage: Storage

    public init(id: LinkID, name: String, facts: LinkFacts = LinkFacts()) {
        storage = Storage(id: id, name: name, facts: facts)
    }

    public var id: LinkID { storage.id }
    public var name: String { storage.name }
    public var facts: LinkFacts { storage.facts }

    public static func == (a: LinkView, b: LinkView) -> Bool {
        a.storage === b.storage || (a.id == b.id && a.name == b.name && a.facts == b.facts)
    }

    /// The facts of `link` when it is the one named `interface` ("" names none).
    public static func facts(of link: LinkView?, on interface: String) -> LinkFacts? {
        guard let link, !interface.isEmpty, link.name == interface else { return nil }
        return link.facts
    }
}
