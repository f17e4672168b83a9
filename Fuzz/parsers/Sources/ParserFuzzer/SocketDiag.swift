import ReachabilityRules

// libFuzzer entry for the sock_diag reply's reader (the traffic evidence's census), built by `make fuzz`.

func socketDiagFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    // Exactly the input's bytes, at any alignment: the answer to request 1 (the corpus's sequence) and to another.
    for sequence: UInt32 in [1, 7] {
        var result = SocketDiagReply.Result()
        SocketDiagReply.parse(UnsafeRawBufferPointer(start: data, count: size), sequence: sequence, into: &result)
        // Each connection takes a header and an inet_diag_msg at least.
        precondition(result.connections.count <= size / (16 + 72))
        for connection in result.connections { precondition(connection.remote.bitLength == 32 || connection.remote.bitLength == 128) }
    }
    return 0
}
