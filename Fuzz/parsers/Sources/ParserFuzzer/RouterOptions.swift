import NetAddress
import ReachabilityRules
import Timekeeping

// libFuzzer entry for the router advertisements' options (RTNLGRP_ND_USEROPT): the option reader,
// then the reachability core keeping what they say, built by `make fuzz`.

func routerOptionsFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let (options, malformed) = RouterOption.parse(bytes)
    // Each option, good or bad, takes 8 bytes at least (a bad length ends the reading).
    precondition(options.count * 8 <= size && options.count + malformed.count <= size / 8 + 2)
    for case .pref64(let prefix, _) in options {
        precondition(Nat64Prefix.validLengths.contains(prefix.length))
        precondition(prefix.extract(prefix.synthesize(.v4([198, 18, 2, 2]))!) == .v4([198, 18, 2, 2]))
    }
    var core = ReachabilityCore { _ in .ethernet }
    let router = IPAddress.v6([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1])
    core.receive([.newLink(Link(index: 2, name: "eth0", flags: 0x10041, type: 1)),
                  .newRoute(Route(family: 10, outputInterface: 2, gateway: router), sequence: 0),
                  .routerOptions(index: 2, options: bytes, source: router), .routerOptions(index: 3, options: bytes, source: router),
                  .routerOptions(index: 2, options: bytes)],
                 malformed: 0, now: Instant(nanoseconds: 1))
    precondition(core.nat64.count <= 1)
    precondition(core.portalAPIs.count <= 1 && core.portalAPIs.values.allSatisfy { $0.utf8.count <= RouterOption.longestPortalURI })
    core.handleTimeout(now: .distantFuture)
    precondition(core.nat64.isEmpty)
    return 0
}
