/// A client behind two routers, so that the gateway, the path past it and the far host can be told
/// apart: client 198.18.0.2 / fd00::2 — gateway 198.18.0.1 / fd00::1 (link `<tag>c0`) — upstream
/// router 198.18.1.2 / fd00:1::2 — server 198.18.2.2 / fd00:2::2. Each fault is nftables rules in
/// the namespace it concerns, undone by `heal`.
public final class RouterChain {
    public let client: NetworkNamespace
    public let gateway: NetworkNamespace
    public let upstream: NetworkNamespace
    public let server: NetworkNamespace
    public let clientLink: String
    private var faulty: [NetworkNamespace] = []

    public init(tag: String) throws {
        client = try NetworkNamespace("\(tag)client")
        gateway = try NetworkNamespace("\(tag)gw")
        upstream = try NetworkNamespace("\(tag)up")
        server = try NetworkNamespace("\(tag)server")
        clientLink = "\(tag)c0"
        try sh("ip link add \(clientLink) netns \(client.name) type veth peer name \(tag)g0 netns \(gateway.name)")
        try sh("ip link add \(tag)g1 netns \(gateway.name) type veth peer name \(tag)u0 netns \(upstream.name)")
        try sh("ip link add \(tag)u1 netns \(upstream.name) type veth peer name \(tag)s0 netns \(server.name)")
        let addresses: [(NetworkNamespace, String, String, String)] = [
            (client, clientLink, "198.18.0.2/24", "fd00::2/64"),
            (gateway, "\(tag)g0", "198.18.0.1/24", "fd00::1/64"),
            (gateway, "\(tag)g1", "198.18.1.1/24", "fd00:1::1/64"),
            (upstream, "\(tag)u0", "198.18.1.2/24", "fd00:1::2/64"),
            (upstream, "\(tag)u1", "198.18.2.1/24", "fd00:2::1/64"),
            (server, "\(tag)s0", "198.18.2.2/24", "fd00:2::2/64"),
        ]
        for (namespace, link, v4, v6) in addresses {
            try namespace.ip("addr add \(v4) dev \(link)")
            try namespace.ip("-6 addr add \(v6) dev \(link) nodad")
            try namespace.ip("link set \(link) up")
        }
        for router in [gateway, upstream] {
            _ = try router.exec(
                "sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 net.ipv4.icmp_ratelimit=0 "
                    + "net.ipv6.icmp.ratelimit=0")
        }
        try client.ip("route add default via 198.18.0.1")
        try client.ip("-6 route add default via fd00::1")
        try gateway.ip("route add default via 198.18.1.2")
        try gateway.ip("-6 route add default via fd00:1::2")
        try upstream.ip("route add 198.18.0.0/24 via 198.18.1.1")
        try upstream.ip("-6 route add fd00::/64 via fd00:1::1")
        try server.ip("route add default via 198.18.2.1")
        try server.ip("-6 route add default via fd00:2::1")
    }

    /// The gateway is gone: it drops everything from the client, its ARP and Neighbor Solicitations too.
    public func silenceGateway() throws {
        try drop(
            in: gateway, "add table netdev fault",
            "add chain netdev fault arriving { type filter hook ingress device \(gatewayLink) priority -500 ; policy drop ; }"
        )
    }

    /// The gateway answers its neighbours (ARP, NDP) but forwards nothing.
    public func stopForwarding() throws {
        try drop(
            in: gateway, "add table inet fault",
            "add chain inet fault forwarding { type filter hook forward priority 0 ; policy drop ; }")
    }

    /// The gateway drops every ICMP packet it would forward (echoes and errors alike), and forwards the rest.
    public func dropPing() throws {
        try drop(
            in: gateway, "add table inet fault",
            "add chain inet fault forwarding { type filter hook forward priority 0 ; }")
        _ = try gateway.exec("nft 'add rule inet fault forwarding meta l4proto { icmp, ipv6-icmp } drop'")
    }

    /// The upstream router takes nothing in: nothing past the gateway answers, not even with Time Exceeded.
    public func silenceUpstream() throws {
        try drop(
            in: upstream, "add table inet fault",
            "add chain inet fault early { type filter hook prerouting priority -400 ; policy drop ; }")
    }

    /// The server drops everything: the path answers (Time Exceeded from the upstream router), Host does not.
    public func silenceServer() throws {
        try drop(
            in: server, "add table inet fault",
            "add chain inet fault arriving { type filter hook input priority 0 ; policy drop ; }")
    }

    public func heal() throws {
        for namespace in faulty {
            _ = try? namespace.exec("nft delete table inet fault")
            _ = try? namespace.exec("nft delete table netdev fault")
        }
        faulty = []
    }

    private var gatewayLink: String { String(clientLink.dropLast(2)) + "g0" }

    private func drop(in namespace: NetworkNamespace, _ table: String, _ chain: String) throws {
        _ = try namespace.exec("nft '\(table)'")
        _ = try namespace.exec("nft '\(chain)'")
        faulty.append(namespace)
    }
}
