import DBusKit

/// The pending Waits and Checks of the whole service, counted the three ways
/// INTERFACE.md bounds them: per client and kind over all targets, per user, and in
/// all, with a share kept for root. A caller's user is asked of the bus once per
/// client; its calls wait for that answer (parked, bounded like the rest) before they
/// count, so no call is admitted on a guess.
public final class PendingBudget {
    public enum Kind: Sendable { case wait, check }

    public struct Limits: Sendable {
        public var inAll = 4_096
        public var perUser = 1_024
        public var keptForRoot = 256
        public var perClientAndKind = 64

        public init() {}
    }

    /// Asks who is behind a unique bus name; answers on the loop, nil when the bus cannot tell.
    public typealias Identify = (_ sender: String, _ answer: @escaping (UInt32?) -> Void) -> Void

    public let limits: Limits
    private let identify: Identify
    public private(set) var inUse = 0
    private var byClient: [ClientKind: Int] = [:]
    private var byUser: [UInt32: Int] = [:]
    /// Each identified client's user, kept until the client leaves (a unique name is never reused).
    private var users: [String: UInt32] = [:]
    private var parked: [String: [Parked]] = [:]
    private var parkedCount = 0

    private struct ClientKind: Hashable {
        let client: String
        let kind: Kind
    }

    private struct Parked {
        let kind: Kind
        let call: MethodCall
        let proceed: (MethodCall) -> Void
    }

    /// The user counted for a client the bus could not name: never root.
    static let unknownUser = UInt32.max

    public init(limits: Limits = Limits(), identify: @escaping Identify = { _, answer in answer(nil) }) {
        self.limits = limits
        self.identify = identify
    }

    public func count(for client: String, _ kind: Kind) -> Int { byClient[ClientKind(client: client, kind: kind)] ?? 0 }
    public func count(forUser uid: UInt32) -> Int { byUser[uid] ?? 0 }

    /// Lets `call` be kept: `proceed` runs now when the caller's user is known and there is
    /// room, or once the bus has named the user (the call is failed with LimitsExceeded then
    /// if there is no room). Throws LimitsExceeded when the client already holds its share.
    public func admit(_ call: MethodCall, _ kind: Kind, proceed: @escaping (MethodCall) -> Void) throws(DBusError) {
        let client = call.sender
        let parkedOfKind = parked[client]?.filter { $0.kind == kind }.count ?? 0
        guard count(for: client, kind) + parkedOfKind < limits.perClientAndKind else {
            throw .limitsExceeded(
                "at most \(limits.perClientAndKind) pending \(kind == .wait ? "Waits" : "Checks") per client")
        }
        if let uid = users[client] {
            try checkRoom(for: uid)
            proceed(call)
            return
        }
        guard parkedCount < limits.inAll else {
            throw .limitsExceeded("the service holds \(limits.inAll) calls already")
        }
        let first = parked[client] == nil
        parked[client, default: []].append(Parked(kind: kind, call: call, proceed: proceed))
        parkedCount += 1
        guard first else { return }
        identify(client) { [weak self] uid in self?.identified(client, uid ?? Self.unknownUser) }
    }

    private func identified(_ client: String, _ uid: UInt32) {
        // The client left meanwhile: its calls are gone already.
        guard let waiting = parked.removeValue(forKey: client) else { return }
        parkedCount -= waiting.count
        remember(client, uid)
        for entry in waiting where !entry.call.isAnswered {
            do throws(DBusError) {
                try checkRoom(for: uid)
                entry.proceed(entry.call)
            } catch {
                entry.call.fail(error)
            }
        }
    }

    private func checkRoom(for uid: UInt32) throws(DBusError) {
        let share = uid == 0 ? limits.inAll : limits.inAll - limits.keptForRoot
        guard inUse < share else {
            throw .limitsExceeded("the service holds \(share) pending calls already")
        }
        guard uid == 0 || count(forUser: uid) < limits.perUser else {
            throw .limitsExceeded("at most \(limits.perUser) pending calls per user")
        }
    }

    /// A call was kept (by PendingCalls, after `admit` let it).
    func take(_ client: String, _ kind: Kind) {
        let uid = users[client] ?? Self.unknownUser
        remember(client, uid)
        byClient[ClientKind(client: client, kind: kind), default: 0] += 1
        byUser[uid, default: 0] += 1
        inUse += 1
    }

    /// A kept call was answered or dropped.
    func release(_ client: String, _ kind: Kind) {
        let key = ClientKind(client: client, kind: kind)
        guard let held = byClient[key] else { return }
        byClient[key] = held > 1 ? held - 1 : nil
        let uid = users[client] ?? Self.unknownUser
        if let count = byUser[uid] { byUser[uid] = count > 1 ? count - 1 : nil }
        inUse -= 1
    }

    /// The client left the bus: its parked calls go unanswered (its kept ones go through
    /// PendingCalls, before this), and its user is forgotten.
    public func clientVanished(_ client: String) {
        if let waiting = parked.removeValue(forKey: client) { parkedCount -= waiting.count }
        if count(for: client, .wait) == 0, count(for: client, .check) == 0 { users[client] = nil }
    }

    /// Users are kept until their client leaves; past this many clients, those holding
    /// nothing are forgotten (asked again on their next call), so the table stays bounded
    /// even where leaving clients go unnoticed.
    static let rememberedClients = 16_384

    private func remember(_ client: String, _ uid: UInt32) {
        if users[client] == nil, users.count >= Self.rememberedClients {
            users = users.filter { count(for: $0.key, .wait) + count(for: $0.key, .check) > 0 }
        }
        users[client] = uid
    }
}

extension PendingBudget {
    /// Asks `connection`'s bus for each client's uid (GetConnectionUnixUser), without blocking.
    public static func askingBus(_ connection: BusConnection) -> Identify {
        { [weak connection] sender, answer in
            guard let connection, let message = try? Message.busCall("GetConnectionUnixUser", [.string(sender)]) else {
                answer(nil)
                return
            }
            connection.send(message, timeoutMilliseconds: 5_000) { result in
                guard case .success(let reply) = result, let uid = (try? reply.arguments())?.first?.uint32Value else {
                    answer(nil)
                    return
                }
                answer(uid)
            }
        }
    }
}
