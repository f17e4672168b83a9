import CLinux
import EventLoop
import Glibc
import NetAddress
import NetCore
import ProbeRules
import Reachability
import ReachabilityRules
import Timekeeping

/// The service's own neighbour check of a next hop (INTERFACE.md "The neighbour check"): up to
/// `tries` unicast ARP requests (IPv4, to the gateway's last known link-layer address in the
/// kernel's neighbour table, else broadcast) or Neighbor Solicitations (IPv6), `spacing` apart, on a socket of its own bound to
/// the route's interface and closed when done. Only an answer from the gateway's own address counts:
/// `.reachable`; none after the last try's spacing is `.unreachable`; a check that cannot be made
/// (no CAP_NET_RAW, no hardware address) is `.unknown`. Ends once, through `completion`.
public final class NeighborCheckRun {
    public static let tries = 3
    public static let spacing = Duration.milliseconds(200)

    private let loop: MainLoop
    private let life: OneShotRun<NeighborAnswer>
    private let gateway: IPAddress
    private let interfaceIndex: Int32
    private var descriptor: Descriptor?
    private var sent = 0
    private var packet: [UInt8] = []
    private var destination: [UInt8] = NeighborPackets.broadcast
    /// Our link-layer address and our address on the link: an ARP reply must be addressed to both.
    private var ourHardware: [UInt8] = []
    private var ourAddress: IPAddress?
    private var buffer = [UInt8](repeating: 0, count: 512)
    /// How many requests went out (for the bench's count of packets per diagnosis).
    public private(set) var requestsSent = 0

    /// `source`: our address on the link (the route's preferred source), the ARP request's sender.
    public init(
        loop: MainLoop, gateway: IPAddress, interfaceIndex: Int32, source: IPAddress?,
        completion: @escaping (NeighborAnswer) -> Void
    ) {
        self.loop = loop
        life = OneShotRun(loop: loop, completion: completion)
        self.gateway = gateway
        self.interfaceIndex = interfaceIndex
        life.release = { [unowned self] in descriptor = nil }
        guard open(sender: source) else {
            loop.atEndOfTurn { [weak self] in self?.life.finish(.unknown) }
            return
        }
        sendNext()
    }

    deinit { life.abandon() }

    /// Nothing more is sent or heard; no completion.
    public func cancel() {
        life.cancel()
    }

    /// Opens the socket and builds the request; false when the check cannot be made.
    private func open(sender: IPAddress?) -> Bool {
        var hardware = [UInt8](repeating: 0, count: 6)
        let type = hardware.withUnsafeMutableBufferPointer {
            CLinux_link_hardware_address(interfaceIndex, $0.baseAddress)
        }
        let ours: [UInt8]? = type == Int32(ARPHRD_ETHER) && hardware != [0, 0, 0, 0, 0, 0] ? hardware : nil
        let cached =
            gateway.ipFamily == .v4
            ? KernelNeighbors.linkLayerAddress(of: gateway, interfaceIndex: interfaceIndex) : nil
        let fd: Int32
        switch gateway.ipFamily {
        case .v4:
            guard let ours, let sender,
                let request = NeighborPackets.arpRequest(
                    senderHardware: ours, sender: sender,
                    targetHardware: cached ?? [0, 0, 0, 0, 0, 0], target: gateway)
            else { return false }
            packet = request
            destination = cached ?? NeighborPackets.broadcast
            ourHardware = ours
            ourAddress = sender
            fd = CLinux_packet_socket(interfaceIndex, CLinux_ETH_P_ARP)
        case .v6:
            guard let solicitation = NeighborPackets.solicitation(target: gateway, sourceHardware: ours) else {
                return false
            }
            packet = solicitation
            fd = CLinux_neighbor_socket6(interfaceIndex)
        }
        guard fd >= 0 else { return false }
        descriptor = Descriptor(owning: fd)
        life.watch(fd: fd, interest: .readable) { [weak self] _ in self?.receiveAll() }
        return true
    }

    private func sendNext() {
        guard let fd = descriptor?.raw else { return }
        guard sent < Self.tries else { return life.finish(.unreachable) }
        sent += 1
        let result = gateway.ipFamily == .v4 ? sendArp(fd) : sendSolicitation(fd)
        if result >= 0 { requestsSent += 1 }
        life.schedule(after: Self.spacing) { [weak self] in self?.sendNext() }
    }

    private func sendArp(_ fd: Int32) -> Int {
        packet.withUnsafeBytes { bytes in
            destination.withUnsafeBufferPointer {
                CLinux_packet_send(
                    fd, interfaceIndex, CLinux_ETH_P_ARP, $0.baseAddress, bytes.baseAddress, UInt(bytes.count))
            }
        }
    }

    private func sendSolicitation(_ fd: Int32) -> Int {
        // A link-local next hop is reached through the route's interface.
        let scoped = IPAddress.v6(gateway.bytes, zone: IPAddress.Zone(index: UInt32(bitPattern: interfaceIndex)))
        return packet.withUnsafeBytes { bytes in
            scoped.withSocketAddress { address, length in sendto(fd, bytes.baseAddress, bytes.count, 0, address, length)
            }
        }
    }

    private func receiveAll() {
        if gateway.ipFamily == .v6 { return receiveAdvertisements() }
        // Bounded per wake-up; the socket lives for at most 600 ms.
        for _ in 0..<64 {
            guard let fd = descriptor?.raw, let ourAddress else { return }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count >= 0 else { return }
            if NeighborPackets.isArpReply(
                Array(buffer[..<count]), from: gateway, gatewayHardware: destination, to: ourHardware, ourAddress)
            {
                return life.finish(.reachable)
            }
        }
    }

    /// An advertisement counts only from the gateway's own address, for it, and with hop limit 255 (sent on the link).
    private func receiveAdvertisements() {
        for _ in 0..<64 {
            guard let fd = descriptor?.raw, let datagram = HopLimitDatagram.receive(fd, into: &buffer) else { return }
            if datagram.source?.bytes == gateway.bytes,
                NeighborPackets.isAdvertisement(
                    Array(buffer[..<datagram.count]), for: gateway, hopLimit: datagram.hopLimit)
            {
                return life.finish(.reachable)
            }
        }
    }
}
