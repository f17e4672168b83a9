import Glibc
import NetAddress

// libFuzzer entry for NetAddress's numeric address reader, held to glibc's inet_pton(3): the same bytes
// or both nothing (a zone is the caller's: the text before `%` is what is compared, and a numeric zone
// is taken as that number).

func addressFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size <= 128 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard !bytes.contains(0) else { return 0 }
    let text = String(decoding: bytes, as: UTF8.self)
    let ours = IPAddress(numeric: text, interfaceIndex: { _ in 7 })
    // Bytes, as inet_pton reads them: a `%` followed by a combining mark is one Character, still a `%` byte.
    let percent = bytes.firstIndex(of: UInt8(ascii: "%"))
    let bare = String(decoding: bytes[..<(percent ?? bytes.endIndex)], as: UTF8.self)
    var v4 = in_addr()
    var v6 = in6_addr()
    let glibc: [UInt8]? =
        inet_pton(AF_INET, text, &v4) == 1
        ? withUnsafeBytes(of: &v4) { Array($0) }
        : inet_pton(AF_INET6, bare, &v6) == 1 ? withUnsafeBytes(of: &v6) { Array($0) } : nil
    let zoned = percent != nil
    if let ours {
        precondition(glibc == Array(ours.bytes), "read '\(text)' as \(ours), glibc as \(String(describing: glibc))")
        if case .v6(_, let zone) = ours { precondition(zoned == (zone.index != 0)) }
    } else if !zoned {
        precondition(glibc == nil, "refused '\(text)', which glibc reads")
    }
    return 0
}
