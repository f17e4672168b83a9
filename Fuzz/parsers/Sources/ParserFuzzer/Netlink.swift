import NetAddress
import ReachabilityRules

// libFuzzer entry for the rtnetlink parser (ReachabilityRules), built by `make fuzz`.

func netlinkFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let result = NetlinkParser.parse(UnsafeBufferPointer(start: data, count: size))
    for message in result.messages {
        switch message {
        case .newLink(let link):
            // 15 raw bytes at most; invalid UTF-8 decodes to U+FFFD, 3 bytes each.
            precondition(link.index > 0 && !link.name.isEmpty && link.name.unicodeScalars.count <= 15)
        case .newAddress(let address), .deleteAddress(let address):
            precondition(address.prefixLength <= address.address.bitLength)
        case .newRoute(let route, _), .deleteRoute(let route):
            precondition(route.destinationLength <= 128)
            _ = route.destination?.description
        default:
            break
        }
    }
    precondition(result.messages.count + result.malformed <= size / 16 + 1)
    // The neighbour table's reader (the next hop's link-layer address) over the same bytes.
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let found = NeighborDump.hardwareAddress(of: .v4([198, 18, 0, 1]), interfaceIndex: 3, in: bytes).address {
        precondition(found.count == 6)
    }
    return 0
}
