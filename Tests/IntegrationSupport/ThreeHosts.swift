/// A client, a router and a server namespace: the client on 198.18.0.0/24 and
/// fd00::/64 (link `<tag>c0`), the server on 198.18.2.0/24 and fd00:2::/64 with
/// a second address 198.18.2.3, the router forwarding between them.
public final class ThreeHosts {
    public let client: NetworkNamespace
    public let router: NetworkNamespace
    public let server: NetworkNamespace
    /// The client's link to the router, and the router's to the client.
    public let clientLink: String
    public let routerClientLink: String

    public init(tag: String) throws {
        client = try NetworkNamespace("\(tag)client")
        router = try NetworkNamespace("\(tag)router")
        server = try NetworkNamespace("\(tag)server")
        clientLink = "\(tag)c0"
        routerClientLink = "\(tag)r0"
        try sh("ip link add \(clientLink) netns \(client.name) type veth peer name \(tag)r0 netns \(router.name)")
        try sh("ip link add \(tag)s0 netns \(server.name) type veth peer name \(tag)r1 netns \(router.name)")
        try client.ip("addr add 198.18.0.2/24 dev \(clientLink)")
        try client.ip("-6 addr add fd00::2/64 dev \(clientLink) nodad")
        try router.ip("addr add 198.18.0.1/24 dev \(tag)r0")
        try router.ip("-6 addr add fd00::1/64 dev \(tag)r0 nodad")
        try router.ip("addr add 198.18.2.1/24 dev \(tag)r1")
        try router.ip("-6 addr add fd00:2::1/64 dev \(tag)r1 nodad")
        try server.ip("addr add 198.18.2.2/24 dev \(tag)s0")
        try server.ip("addr add 198.18.2.3/24 dev \(tag)s0")
        try server.ip("-6 addr add fd00:2::2/64 dev \(tag)s0 nodad")
        for (namespace, link) in [
            (client, clientLink), (router, "\(tag)r0"), (router, "\(tag)r1"), (server, "\(tag)s0"),
        ] {
            try namespace.ip("link set \(link) up")
        }
        // Repeated REJECTs in quick succession need the router's ICMP rate limit off.
        _ = try router.exec("sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 net.ipv4.icmp_ratelimit=0")
        try client.ip("route add default via 198.18.0.1")
        try client.ip("-6 route add default via fd00::1")
        try server.ip("route add default via 198.18.2.1")
        try server.ip("-6 route add default via fd00:2::1")
    }

    /// A captive portal: the router sends the client's port 80 to its own portal server on
    /// 198.18.0.1:8080 and, unless it lets the rest through, drops everything else.
    public func closePortal(droppingTheRest: Bool = true) throws {
        _ = try router.exec("nft add table ip portal")
        _ = try router.exec("nft add chain ip portal portal_nat { type nat hook prerouting priority -100 \\; }")
        _ = try router.exec(
            "nft add rule ip portal portal_nat iifname \(routerClientLink) tcp dport 80 dnat to 198.18.0.1:8080")
        guard droppingTheRest else { return }
        _ = try router.exec("nft add chain ip portal portal_filter { type filter hook forward priority 0 \\; }")
        _ = try router.exec("nft add rule ip portal portal_filter iifname \(routerClientLink) drop")
    }

    /// Signed in: the portal is gone.
    public func openPortal() throws { _ = try router.exec("nft delete table ip portal") }
}
