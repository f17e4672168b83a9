/// How many TCP probe connections may be open: at most `perTarget` for one engine and
/// `inAll` for every engine sharing this budget. A probe that would pass either sends
/// no connection, so no setting and no number of targets holds more descriptors.
public final class TCPConnectionBudget {
    public static let perTarget = 4
    public let inAll: Int
    public private(set) var open = 0

    public init(inAll: Int = 256) {
        self.inAll = inAll
    }

    /// Takes one connection for an engine holding `held`; false when there is no room.
    public func take(holding held: Int) -> Bool {
        guard held < Self.perTarget, open < inAll else { return false }
        open += 1
        return true
    }

    public func giveBack() {
        open -= 1
    }
}
