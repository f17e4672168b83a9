/// The next hop's answer to the service's own neighbour check (`Neighbor4`, `Neighbor6`).
public enum NeighborAnswer: String, Sendable {
    case reachable, unreachable
    /// The check could not be made (no capability, no link-layer address of our own).
    case unknown
}

/// What the one TTL-limited probe past the gateway found.
public enum BeyondAnswer: Equatable, Sendable {
    /// A router past the gateway said Time Exceeded: the upstream carries packets.
    case carried
    /// Nothing came back within the limit.
    case silent
}
