import Glibc
import NetAddress

extension IPAddress {
    /// Calls `body` with this address (and `port`) as a sockaddr_in / sockaddr_in6.
    public func withSocketAddress<T>(port: UInt16 = 0, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        switch self {
        case .v4(let bytes):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(let bytes, let zone):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_scope_id = zone.index
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }

    /// The address in a sockaddr_in / sockaddr_in6 (nil for other families or short lengths).
    public init?(socketAddress pointer: UnsafeRawPointer, length: Int) {
        guard length >= MemoryLayout<sa_family_t>.size else { return nil }
        let family = Int32(pointer.loadUnaligned(as: sa_family_t.self))
        if family == AF_INET, length >= MemoryLayout<sockaddr_in>.size {
            let address = pointer.loadUnaligned(as: sockaddr_in.self)
            self = withUnsafeBytes(of: address.sin_addr) { .v4(AddressBytes($0)) }
        } else if family == AF_INET6, length >= MemoryLayout<sockaddr_in6>.size {
            let address = pointer.loadUnaligned(as: sockaddr_in6.self)
            self = withUnsafeBytes(of: address.sin6_addr) {
                .v6(AddressBytes($0), zone: IPAddress.Zone(index: address.sin6_scope_id))
            }
        } else {
            return nil
        }
    }
}
