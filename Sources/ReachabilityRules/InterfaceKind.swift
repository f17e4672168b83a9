/// What kind of link carries the route (INTERFACE.md, "Interface kinds").
public enum InterfaceKind: String, Sendable, CaseIterable {
    case wifi, cellular, vpn, ethernet, other
}
