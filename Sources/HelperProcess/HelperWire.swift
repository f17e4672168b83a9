import EventLoop
import MonitorRules
import NetAddress
import ReachabilityRules
import ProbeRules
import Timekeeping
import TrafficCensus

/// The daemon's blocking work, as it asks its helper process for it: name lookups, census walks,
/// the state directory's files.
package enum HelperRequest: Equatable, Sendable {
    case resolve(host: String, family: Int32)
    case sample(host: IPAddress, route: HostRoute?, sources: [IPAddress], now: Instant)
    case write(directory: String, name: String, text: String)
    case remove(directory: String, name: String)
    case read(directory: String, name: String, maximumSize: Int)
    /// Answered once every request before it on its lane is done.
    case barrier
    /// `question` asked of the nameservers of /etc/resolv.conf in order, all of them within `limitSeconds`;
    /// unless `viaStub`, not when they are only systemd-resolved's stub (resolved is asked over D-Bus instead).
    case askDns(DnsQuestion, limitSeconds: UInt32, viaStub: Bool)
}

/// What the helper answers each request with (`resolve` → `resolved`, and so on).
package enum HelperAnswer: Equatable, Sendable {
    case resolved(Result<[IPAddress], ResolverFailure>)
    case sampled(TrafficSampler.Taken)
    case written(SystemError?)
    case removed(Bool)
    /// The file's bytes (nil: there is none), or why it was refused.
    case read(Result<[UInt8]?, AtomicFile.Refused>)
    case passed
    case dnsAnswered(DnsReply)

    /// Whether this is the kind of answer `request` gets (`resolve` → `resolved`, and so on).
    package func answers(_ request: HelperRequest) -> Bool {
        switch (request, self) {
        case (.resolve, .resolved), (.sample, .sampled), (.write, .written), (.remove, .removed), (.read, .read),
            (.barrier, .passed), (.askDns, .dnsAnswered):
            true
        default: false
        }
    }

    /// What a quiet request is answered with: only a failure (a write that did not reach the disk).
    package var isFailure: Bool {
        switch self {
        case .written(let error): return error != nil
        case .resolved(.failure), .read(.failure): return true
        case .sampled(let taken):
            if case .failure = taken.result { return true }
            return false
        case .resolved, .removed, .read, .passed, .dnsAnswered: return false
        }
    }
}

/// Each kind of work waits only behind its own kind: a lookup that hangs never holds up a write.
package enum HelperLane: UInt8, CaseIterable, Sendable {
    case lookups, census, settings, history
    /// The default target's lookups (its Host's and its checks'): a lane of their own, so no other target's hung
    /// lookup, under way in `lookups`, holds them up.
    case firstLookups
    /// DNS truth's questions: a few threads of their own, so no question waits behind another target's for long,
    /// and none behind a name lookup or the census.
    case dnsTruth
}

/// The wire between the daemon and its helper, over a stream socket: frames of a 4-byte length,
/// then an 8-byte request number, a lane (a request's with its top bit set when it is quiet: answered
/// only if it fails), and the request or answer. Numbers are little-endian,
/// strings and lists counted. A frame that does not decode whole is refused.
package enum HelperWire {
    /// No frame is longer (a history file, 640 KiB, is the longest thing carried).
    package static let maximumFrame = 1 << 20
    package static let headerLength = 4

    package static let quietBit: UInt8 = 0x80

    package static func frame(id: UInt64, lane: HelperLane, quiet: Bool = false, _ request: HelperRequest) -> [UInt8] {
        var out = WireOut()
        out.u64(id)
        out.u8(lane.rawValue | (quiet ? quietBit : 0))
        switch request {
        case .resolve(let host, let family):
            out.u8(0); out.string(host); out.u32(UInt32(bitPattern: family))
        case .sample(let host, let route, let sources, let now):
            out.u8(1); out.address(host); out.u32(UInt32(sources.count)); sources.forEach { out.address($0) }
            out.u64(now.nanoseconds)
            // Host's route: its interface (0: none known) and next hop (none: on-link).
            out.u32(UInt32(bitPattern: route?.interfaceIndex ?? 0))
            if let gateway = route?.gateway {
                out.u8(1); out.address(gateway)
            } else {
                out.u8(0)
            }
        case .write(let directory, let name, let text):
            out.u8(2); out.string(directory); out.string(name); out.string(text)
        case .remove(let directory, let name):
            out.u8(3); out.string(directory); out.string(name)
        case .read(let directory, let name, let maximumSize):
            out.u8(4); out.string(directory); out.string(name); out.u32(UInt32(clamping: maximumSize))
        case .barrier:
            out.u8(5)
        case .askDns(let question, let limit, let viaStub):
            out.u8(6); out.u8(UInt8(question.kind.rawValue)); out.string(question.name)
            out.u8(question.family == .v4 ? 4 : 6); out.u32(limit); out.u8(viaStub ? 1 : 0)
        }
        return out.framed()
    }

    package static func frame(id: UInt64, lane: HelperLane, _ answer: HelperAnswer) -> [UInt8] {
        var out = WireOut()
        out.u64(id)
        out.u8(lane.rawValue)
        switch answer {
        case .resolved(.success(let addresses)):
            out.u8(0); out.u32(UInt32(addresses.count)); addresses.forEach { out.address($0) }
        case .resolved(.failure(let failure)):
            out.u8(1); out.string(failure.message)
        case .sampled(let taken):
            switch taken.result {
            case .success(let sample):
                out.u8(2); out.u64(UInt64(clamping: sample.connections));
                out.u64(UInt64(clamping: sample.receivingRemotes))
                out.u64(UInt64(clamping: sample.retransmittingRemotes))
            case .failure(.incomplete):
                out.u8(3)
            case .failure(.refused(let error)):
                out.u8(4); out.error(error)
            }
            out.u64(taken.cost.nanoseconds); out.u64(taken.dumpCost.nanoseconds)
        case .written(nil):
            out.u8(5)
        case .written(let error?):
            out.u8(6); out.error(error)
        case .removed(let done):
            out.u8(7); out.u8(done ? 1 : 0)
        case .read(.success(nil)):
            out.u8(8)
        case .read(.success(let bytes?)):
            out.u8(9); out.bytes(bytes)
        case .read(.failure(let refused)):
            out.u8(10); out.string(refused.description)
        case .passed:
            out.u8(11)
        case .dnsAnswered(let reply):
            out.u8(12)
            switch reply.outcome {
            case .addresses(let list): out.u8(0); out.u32(UInt32(list.count)); list.forEach { out.address($0) }
            case .noData: out.u8(1)
            case .nxdomain: out.u8(2)
            case .servfail: out.u8(3)
            case .refused: out.u8(4)
            case .otherRcode(let code): out.u8(5); out.u32(UInt32(truncatingIfNeeded: code))
            case .noAnswer(let why): out.u8(6); out.string(why)
            }
            out.string(reply.server)
            out.u8(UInt8(DnsTransport.allCases.firstIndex(of: reply.transport) ?? 0))
            out.u64(reply.roundTrip.nanoseconds)
            out.u8(reply.encryptionExpected ? 1 : 0)
            out.u32(UInt32(reply.resolvers.count)); reply.resolvers.forEach { out.string($0) }
        }
        return out.framed()
    }

    /// The length a frame's header announces, or nil when it is out of bounds (the peer is not ours to trust).
    package static func frameLength(_ header: ArraySlice<UInt8>) -> Int? {
        var input = WireIn(header)
        guard let length = input.u32(), length >= 9, Int(length) <= maximumFrame else { return nil }
        return Int(length)
    }

    /// What `stream` holds from `start` on: a whole frame (its body's range), not yet one, or a header out of bounds.
    package enum Next: Equatable {
        case body(Range<Int>)
        case incomplete
        case outOfBounds
    }

    /// The next frame of a stream as read so far (each side reads the other's frames so).
    package static func next(in stream: [UInt8], from start: Int) -> Next {
        guard stream.count - start >= headerLength else { return .incomplete }
        guard let length = frameLength(stream[start..<start + headerLength]) else { return .outOfBounds }
        let end = start + headerLength + length
        return end <= stream.count ? .body(start + headerLength..<end) : .incomplete
    }

    /// A frame's body (after the length) as a request.
    package static func request(
        _ body: ArraySlice<UInt8>
    ) -> (id: UInt64, lane: HelperLane, quiet: Bool, request: HelperRequest)? {
        var input = WireIn(body)
        guard let id = input.u64(), let laneByte = input.u8(), let lane = HelperLane(rawValue: laneByte & ~quietBit),
            let kind = input.u8()
        else { return nil }
        let request: HelperRequest
        switch kind {
        case 0:
            guard let host = input.string(), let family = input.u32() else { return nil }
            request = .resolve(host: host, family: Int32(bitPattern: family))
        case 1:
            guard let host = input.address(), let sources = input.addresses(), let now = input.u64(),
                let index = input.u32(), let hasGateway = input.u8(), hasGateway <= 1
            else { return nil }
            var gateway: IPAddress?
            if hasGateway == 1 {
                guard let address = input.address() else { return nil }
                gateway = address
            }
            let route = index == 0 ? nil : HostRoute(interfaceIndex: Int32(bitPattern: index), gateway: gateway)
            request = .sample(host: host, route: route, sources: sources, now: Instant(nanoseconds: now))
        case 2:
            guard let directory = input.string(), let name = input.string(), let text = input.string() else {
                return nil
            }
            request = .write(directory: directory, name: name, text: text)
        case 3:
            guard let directory = input.string(), let name = input.string() else { return nil }
            request = .remove(directory: directory, name: name)
        case 4:
            guard let directory = input.string(), let name = input.string(), let size = input.u32() else { return nil }
            request = .read(directory: directory, name: name, maximumSize: Int(size))
        case 5:
            request = .barrier
        case 6:
            guard let kind = input.u8().flatMap({ DnsQuestionKind(rawValue: Int($0)) }), let name = input.string(),
                let family = input.u8().flatMap({ [4: IPFamily.v4, 6: .v6][$0] }), let limit = input.u32(),
                let viaStub = input.u8(), viaStub <= 1
            else { return nil }
            request = .askDns(
                DnsQuestion(kind: kind, name: name, family: family), limitSeconds: limit, viaStub: viaStub == 1)
        default:
            return nil
        }
        guard input.isAtEnd else { return nil }
        return (id, lane, laneByte & quietBit != 0, request)
    }

    /// A frame's body (after the length) as an answer.
    package static func answer(_ body: ArraySlice<UInt8>) -> (id: UInt64, lane: HelperLane, answer: HelperAnswer)? {
        var input = WireIn(body)
        guard let id = input.u64(), let lane = input.u8().flatMap(HelperLane.init), let kind = input.u8() else {
            return nil
        }
        let answer: HelperAnswer
        switch kind {
        case 0:
            guard let addresses = input.addresses() else { return nil }
            answer = .resolved(.success(addresses))
        case 1:
            guard let message = input.string() else { return nil }
            answer = .resolved(.failure(ResolverFailure(message: message)))
        case 2, 3, 4:
            let result: Result<TrafficSample, CensusFailure>
            switch kind {
            case 2:
                guard let connections = input.count(), let receiving = input.count(), let retransmitting = input.count()
                else { return nil }
                result = .success(
                    TrafficSample(
                        connections: connections, receivingRemotes: receiving, retransmittingRemotes: retransmitting))
            case 3:
                result = .failure(.incomplete)
            default:
                guard let error = input.error() else { return nil }
                result = .failure(.refused(error))
            }
            guard let cost = input.u64(), let dumpCost = input.u64() else { return nil }
            answer = .sampled(
                TrafficSampler.Taken(
                    result: result, cost: Duration(nanoseconds: cost), dumpCost: Duration(nanoseconds: dumpCost)))
        case 5:
            answer = .written(nil)
        case 6:
            guard let error = input.error() else { return nil }
            answer = .written(error)
        case 7:
            guard let done = input.u8(), done <= 1 else { return nil }
            answer = .removed(done == 1)
        case 8:
            answer = .read(.success(nil))
        case 9:
            guard let bytes = input.bytes() else { return nil }
            answer = .read(.success(Array(bytes)))
        case 10:
            guard let reason = input.string() else { return nil }
            answer = .read(.failure(AtomicFile.Refused(description: reason)))
        case 11:
            answer = .passed
        case 12:
            guard let reply = input.dnsReply() else { return nil }
            answer = .dnsAnswered(reply)
        default:
            return nil
        }
        guard input.isAtEnd else { return nil }
        return (id, lane, answer)
    }
}

/// A frame being written: the body, then its length put in front.
private struct WireOut {
    package var body: [UInt8] = []

    package mutating func u8(_ value: UInt8) { body.append(value) }
    package mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { body.append(contentsOf: $0) }
    }
    package mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { body.append(contentsOf: $0) }
    }
    package mutating func bytes(_ value: some Collection<UInt8>) {
        u32(UInt32(value.count)); body.append(contentsOf: value)
    }
    package mutating func string(_ value: String) { bytes(value.utf8) }
    package mutating func error(_ value: SystemError) { string(value.call); u32(UInt32(bitPattern: value.errno)) }
    package mutating func address(_ value: IPAddress) {
        bytes(value.bytes)
        if case .v6(_, let zone) = value { u32(zone.index); string(zone.name) } else { u32(0); string("") }
    }

    package func framed() -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(HelperWire.headerLength + body.count)
        withUnsafeBytes(of: UInt32(body.count).littleEndian) { frame.append(contentsOf: $0) }
        frame.append(contentsOf: body)
        return frame
    }
}

/// A frame being read: every read checks what is left, so a short or lying frame gives nil.
private struct WireIn {
    package var rest: ArraySlice<UInt8>

    package init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

    package var isAtEnd: Bool { rest.isEmpty }

    package mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, rest.count >= count else { return nil }
        defer { rest = rest.dropFirst(count) }
        return rest.prefix(count)
    }

    package mutating func u8() -> UInt8? { take(1)?.first }

    package mutating func u32() -> UInt32? {
        guard let raw = take(4) else { return nil }
        return raw.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    package mutating func u64() -> UInt64? {
        guard let raw = take(8) else { return nil }
        return raw.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A count of things, which is never more than an Int holds.
    package mutating func count() -> Int? { u64().flatMap { Int(exactly: $0) } }

    package mutating func bytes() -> ArraySlice<UInt8>? {
        guard let length = u32() else { return nil }
        return take(Int(length))
    }

    package mutating func string() -> String? { bytes().flatMap { String(validating: $0, as: UTF8.self) } }

    package mutating func error() -> SystemError? {
        guard let call = string(), let code = u32() else { return nil }
        return SystemError(call, errno: Int32(bitPattern: code))
    }

    package mutating func address() -> IPAddress? {
        guard let raw = bytes(), let plain = IPAddress(bytes: raw), let index = u32(), let name = string() else {
            return nil
        }
        if case .v6(let bytes, _) = plain, index != 0 {
            return .v6(bytes, zone: IPAddress.Zone(index: index, name: name))
        }
        return plain
    }

    package mutating func dnsReply() -> DnsReply? {
        let outcome: DnsOutcome
        switch u8() {
        case 0:
            guard let list = addresses() else { return nil }
            outcome = .addresses(list)
        case 1: outcome = .noData
        case 2: outcome = .nxdomain
        case 3: outcome = .servfail
        case 4: outcome = .refused
        case 5:
            guard let code = u32() else { return nil }
            outcome = .otherRcode(Int(Int32(bitPattern: code)))
        case 6:
            guard let why = string() else { return nil }
            outcome = .noAnswer(why)
        default: return nil
        }
        guard let server = string(), let transportIndex = u8(), transportIndex < DnsTransport.allCases.count,
            let roundTrip = u64(), let encrypted = u8(), encrypted <= 1, let count = u32(), Int(count) <= rest.count / 4
        else { return nil }
        var resolvers: [String] = []
        for _ in 0..<count {
            guard let resolver = string() else { return nil }
            resolvers.append(resolver)
        }
        return DnsReply(
            outcome: outcome, server: server, transport: DnsTransport.allCases[Int(transportIndex)],
            roundTrip: Duration(nanoseconds: roundTrip), encryptionExpected: encrypted == 1, resolvers: resolvers)
    }

    /// At most as many as the frame could hold, so a lying count cannot make us reserve memory.
    package mutating func addresses() -> [IPAddress]? {
        guard let count = u32(), Int(count) <= rest.count / 12 else { return nil }
        var addresses: [IPAddress] = []
        for _ in 0..<count {
            guard let address = address() else { return nil }
            addresses.append(address)
        }
        return addresses
    }
}

/// For the fuzzer (`make fuzz`, surface `helper`): `bytes` as a frame's body, read as a request and as an
/// answer; whatever decodes is written again and must read back the same.
public enum HelperWireFuzzing {
    public static func run(_ bytes: [UInt8]) {
        let body = bytes.prefix(HelperWire.maximumFrame)
        _ = HelperWire.frameLength(body.prefix(HelperWire.headerLength))
        if let (id, lane, quiet, request) = HelperWire.request(body) {
            let again = HelperWire.frame(id: id, lane: lane, quiet: quiet, request)
            let decoded = HelperWire.request(again[HelperWire.headerLength...])
            precondition(
                decoded?.id == id && decoded?.lane == lane && decoded?.quiet == quiet && decoded?.request == request,
                "a request does not read back")
        }
        if let (id, lane, answer) = HelperWire.answer(body) {
            let again = HelperWire.frame(id: id, lane: lane, answer)
            let decoded = HelperWire.answer(again[HelperWire.headerLength...])
            precondition(
                decoded?.id == id && decoded?.lane == lane && decoded?.answer == answer, "an answer does not read back")
        }
    }
}
