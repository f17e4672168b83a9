import Glibc

/// client — router — server namespaces with veth pairs (198.18.0.0/24 and
/// 198.18.2.0/24), made on creation and removed when released. With `chain`, an upstream router
/// sits between the router (the client's gateway) and the server, on 198.18.1.0/24.
final class BenchTopology {
    let client: String
    let router: String
    let server: String
    /// The router past the gateway, with `chain`.
    let upstream: String?
    /// The client's link to the router (the router's end is `<tag>r0`).
    let clientLink: String
    let tag: String

    init(_ tag: String, chain: Bool = false) {
        self.tag = tag
        client = "nob-\(tag)c-\(getpid())"
        router = "nob-\(tag)r-\(getpid())"
        server = "nob-\(tag)s-\(getpid())"
        upstream = chain ? "nob-\(tag)u-\(getpid())" : nil
        clientLink = "\(tag)c0"
        for ns in [client, router, server] + (upstream.map { [$0] } ?? []) {
            shell("ip netns add \(ns) && ip -n \(ns) link set lo up")
        }
        shell("ip link add \(clientLink) netns \(client) type veth peer name \(tag)r0 netns \(router)")
        if let upstream {
            shell("ip link add \(tag)u0 netns \(upstream) type veth peer name \(tag)r1 netns \(router)")
            shell("ip link add \(tag)s0 netns \(server) type veth peer name \(tag)u1 netns \(upstream)")
            shell(
                "ip -n \(client) addr add 198.18.0.2/24 dev \(clientLink) && ip -n \(client) link set \(clientLink) up")
            shell("ip -n \(router) addr add 198.18.0.1/24 dev \(tag)r0 && ip -n \(router) link set \(tag)r0 up")
            shell("ip -n \(router) addr add 198.18.1.1/24 dev \(tag)r1 && ip -n \(router) link set \(tag)r1 up")
            shell("ip -n \(upstream) addr add 198.18.1.2/24 dev \(tag)u0 && ip -n \(upstream) link set \(tag)u0 up")
            shell("ip -n \(upstream) addr add 198.18.2.1/24 dev \(tag)u1 && ip -n \(upstream) link set \(tag)u1 up")
            shell("ip -n \(server) addr add 198.18.2.2/24 dev \(tag)s0 && ip -n \(server) link set \(tag)s0 up")
            for ns in [router, upstream] {
                shell("ip netns exec \(ns) sysctl -qw net.ipv4.ip_forward=1 net.ipv4.icmp_ratelimit=0")
            }
            shell("ip -n \(client) route add default via 198.18.0.1")
            shell("ip -n \(router) route add default via 198.18.1.2")
            shell("ip -n \(upstream) route add 198.18.0.0/24 via 198.18.1.1")
            shell("ip -n \(server) route add default via 198.18.2.1")
            return
        }
        shell("ip link add \(tag)s0 netns \(server) type veth peer name \(tag)r1 netns \(router)")
        shell("ip -n \(client) addr add 198.18.0.2/24 dev \(clientLink) && ip -n \(client) link set \(clientLink) up")
        shell("ip -n \(router) addr add 198.18.0.1/24 dev \(tag)r0 && ip -n \(router) link set \(tag)r0 up")
        shell("ip -n \(router) addr add 198.18.2.1/24 dev \(tag)r1 && ip -n \(router) link set \(tag)r1 up")
        shell("ip -n \(server) addr add 198.18.2.2/24 dev \(tag)s0 && ip -n \(server) link set \(tag)s0 up")
        shell("ip netns exec \(router) sysctl -qw net.ipv4.ip_forward=1")
        // Repeated REJECTs in quick succession: without this the router sends one ICMP error a second.
        shell("ip netns exec \(router) sysctl -qw net.ipv4.icmp_ratelimit=0")
        shell("ip -n \(client) route add default via 198.18.0.1")
        shell("ip -n \(server) route add default via 198.18.2.1")
    }

    deinit { remove() }

    /// Deletes the namespaces (again harmlessly): a program that exits runs no deinit.
    func remove() {
        for ns in [client, router, server] + (upstream.map { [$0] } ?? []) {
            _ = system("ip netns del \(ns) 2>/dev/null")
        }
    }
}
