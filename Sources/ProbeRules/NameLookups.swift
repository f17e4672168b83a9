/// Why a name did not resolve, in words for Reason.
public struct ResolverFailure: Error, Equatable, Sendable {
    public let message: String
    public init(message: String) { self.message = message }
}

/// Which lookup a resolver shared by every target starts next: those asked with `first`
/// (the default target's) before the rest, each kind in the order asked. An owner has at
/// most one lookup waiting: a newer one takes the older one's place, so no target's lookups
/// pile up behind a resolver that hangs. HostResolver keeps it behind a lock for its
/// thread; the simulation's resolver uses it as it is.
public struct LookupQueue<Payload: Sendable>: Sendable {
    public struct Entry: Sendable {
        public let id: UInt64
        public let owner: UInt64
        public let first: Bool
        public let payload: Payload

        public init(id: UInt64, owner: UInt64, first: Bool, payload: Payload) {
            self.id = id
            self.owner = owner
            self.first = first
            self.payload = payload
        }
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    /// Queues `entry`; returns the id of the lookup of the same owner it replaces, if any.
    public mutating func add(_ entry: Entry) -> UInt64? {
        let replaced = entries.firstIndex { $0.owner == entry.owner }.map { entries.remove(at: $0).id }
        entries.append(entry)
        return replaced
    }

    /// `firstOnly`: only a lookup asked with `first`.
    public mutating func next(firstOnly: Bool = false) -> Entry? {
        guard let index = entries.firstIndex(where: { $0.first }) ?? (firstOnly ? nil : entries.indices.first) else {
            return nil
        }
        return entries.remove(at: index)
    }

    public mutating func remove(owner: UInt64) {
        entries.removeAll { $0.owner == owner }
    }
}
