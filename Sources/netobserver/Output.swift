import DBusKit
import FoundationEssentials
import Glibc

/// The properties as people and scripts read them.
struct Snapshot: Encodable {
    var Status = ""
    var Reachable = false
    var Host = ""
    var Address = ""
    var Interface = ""
    var Reason = ""
    var RoundTripTime: UInt64 = 0
    var PacketLoss: Double = 0
    var LastChange: UInt64 = 0
    var Interval: UInt32 = 0
    var Timeout: UInt32 = 0
    var FailureThreshold: UInt32 = 0
    var RecoveryThreshold: UInt32 = 0
    var AddressFamily = ""

    init(_ values: [String: DBusValue]) {
        update(values)
    }

    mutating func update(_ values: [String: DBusValue]) {
        for (key, value) in values {
            switch (key, value) {
            case ("Status", .string(let v)): Status = v
            case ("Reachable", .boolean(let v)): Reachable = v
            case ("Host", .string(let v)): Host = v
            case ("Address", .string(let v)): Address = v
            case ("Interface", .string(let v)): Interface = v
            case ("Reason", .string(let v)): Reason = v
            case ("RoundTripTime", .uint64(let v)): RoundTripTime = v
            case ("PacketLoss", .double(let v)): PacketLoss = v
            case ("LastChange", .uint64(let v)): LastChange = v
            case ("Interval", .uint32(let v)): Interval = v
            case ("Timeout", .uint32(let v)): Timeout = v
            case ("FailureThreshold", .uint32(let v)): FailureThreshold = v
            case ("RecoveryThreshold", .uint32(let v)): RecoveryThreshold = v
            case ("AddressFamily", .string(let v)): AddressFamily = v
            default: break
            }
        }
    }

    func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The status screen.
    func screen() -> String {
        let dash = "—"
        var lines = [
            "Status:       \(Status)" + (Reachable ? " (reachable)" : ""),
            "Host:         \(Host)" + (AddressFamily == "any" ? "" : " (\(AddressFamily))"),
            "Address:      \(Address.isEmpty ? dash : Address)",
            "Interface:    \(Interface.isEmpty ? dash : Interface)",
            "Round trip:   \(RoundTripTime == 0 ? dash : Self.milliseconds(RoundTripTime))",
            "Packet loss:  \(Int((PacketLoss * 100).rounded())) % of the last 20 probes",
        ]
        if !Reason.isEmpty { lines.append("Reason:       \(Reason)") }
        lines.append("Since:        \(Self.timestamp(LastChange))")
        lines.append("Probing:      every \(Interval) ms, timeout \(Timeout) ms, down after \(FailureThreshold), up after \(RecoveryThreshold)")
        return lines.joined(separator: "\n")
    }

    /// One line for `monitor`.
    func line() -> String {
        var text = "\(Self.timestamp(LastChange)) \(Status) \(Host)"
        if !Address.isEmpty && Address != Host { text += " (\(Address))" }
        if !Interface.isEmpty { text += " via \(Interface)" }
        if RoundTripTime > 0 && Reachable { text += " rtt \(Self.milliseconds(RoundTripTime))" }
        if !Reason.isEmpty { text += ": \(Reason)" }
        return text
    }

    static func milliseconds(_ microseconds: UInt64) -> String {
        let tenths = (microseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10) ms"
    }

    /// CLOCK_REALTIME microseconds as an ISO 8601 UTC time.
    static func timestamp(_ microseconds: UInt64) -> String {
        guard microseconds > 0 else { return "—" }
        var seconds = time_t(microseconds / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Writes one line straight to a descriptor: no stdio buffer to flush, whole lines to pipes.
func writeLine(_ text: String, to fd: Int32 = 1) {
    let bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}
