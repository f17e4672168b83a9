import Foundation
import Glibc

/// TCP connections over 127.0.0.1 between this process and itself (no root, no network): a
/// listener and `count` connections to it, accepted. For tests of the traffic census.
public final class LoopbackConnections {
    private var descriptors: [Int32] = []

    public init(count: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        descriptors.append(listener)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 64) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listening else { throw NSError(domain: "listen", code: Int(errno)) }
        for _ in 0..<count {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw NSError(domain: "connect", code: Int(errno)) }
            descriptors += [client, accept(listener, nil, nil)]
        }
    }

    deinit {
        for fd in descriptors { _ = close(fd) }
    }

    /// Each connection's client sends a few bytes and its accepted end reads them: data arrived just now.
    public func exchange() {
        for index in stride(from: 1, to: descriptors.count, by: 2) {
            _ = send(descriptors[index], "ping", 4, 0)
            var buffer = [UInt8](repeating: 0, count: 16)
            _ = recv(descriptors[index + 1], &buffer, 16, 0)
        }
    }
}
