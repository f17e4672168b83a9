import NetAddress

extension EchoPacket.Family {
    public init(_ address: IPAddress) {
        self = address.ipFamily == .v4 ? .v4 : .v6
    }
}

extension ProbeTarget {
    /// The target the probe rules know `address` as.
    public init(_ address: IPAddress) {
        self.init(name: address.description, family: EchoPacket.Family(address))
    }
}
