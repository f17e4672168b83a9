import TrafficCensus

// libFuzzer entry for the sock_diag parser (the traffic evidence's census), built by `make fuzz`
// with the C shim that reads tcp_info instrumented too.

func socketDiagFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    // Aligned as a receive buffer is; the answer to request 1 (the corpus's sequence) and to another.
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 8)
    defer { buffer.deallocate() }
    buffer.copyMemory(from: UnsafeRawBufferPointer(start: data, count: size))
    for sequence: UInt32 in [1, 7] {
        var result = SocketDiag.Result()
        SocketDiag.parse(aligned: UnsafeRawBufferPointer(rebasing: buffer[..<size]), sequence: sequence, into: &result)
        // Each connection takes a header and an inet_diag_msg at least.
        precondition(result.connections.count <= size / (16 + 72))
        for connection in result.connections { precondition(connection.remote.bitLength == 32 || connection.remote.bitLength == 128) }
    }
    return 0
}
