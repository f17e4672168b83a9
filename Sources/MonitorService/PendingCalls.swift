import DBusKit
import EventLoop

/// The pending calls of the whole service: every PendingCalls draws on one
/// budget, so no number of clients can hold more than `limit` calls in all.
public final class PendingBudget {
    public let limit: Int
    public fileprivate(set) var inUse = 0

    public init(limit: Int) {
        self.limit = limit
    }
}

/// Method calls answered later (Wait, Check), per client, with a per-client
/// limit, a share of the service-wide budget, and each call's own deadline.
/// A client that leaves the bus has its calls dropped without an answer.
public final class PendingCalls {
    public final class Entry {
        let call: MethodCall
        var timer: LoopTimer?
        let onTimeout: (MethodCall) -> Void

        init(call: MethodCall, onTimeout: @escaping (MethodCall) -> Void) {
            self.call = call
            self.onTimeout = onTimeout
        }
    }

    private let loop: MainLoop
    public let limitPerClient: Int
    private let budget: PendingBudget
    private var byClient: [String: [Entry]] = [:]

    public init(loop: MainLoop, limitPerClient: Int, budget: PendingBudget) {
        self.loop = loop
        self.limitPerClient = limitPerClient
        self.budget = budget
    }

    deinit {
        for entry in byClient.values.joined() {
            if let timer = entry.timer { loop.cancel(timer) }
        }
    }

    public func count(for client: String) -> Int { byClient[client]?.count ?? 0 }

    /// Throws LimitsExceeded when `client` may not keep one more call: check
    /// before doing anything on the call's behalf.
    public func checkRoom(for client: String) throws(DBusError) {
        guard count(for: client) < limitPerClient else {
            throw .limitsExceeded("at most \(limitPerClient) pending calls of this kind per client")
        }
        guard budget.inUse < budget.limit else {
            throw .limitsExceeded("the service holds \(budget.limit) pending calls already")
        }
    }

    /// Keeps `call` until `resolveAll` or its deadline; throws LimitsExceeded past the limits.
    public func add(_ call: MethodCall, timeoutNanoseconds: UInt64,
                    onTimeout: @escaping (MethodCall) -> Void) throws(DBusError) {
        try checkRoom(for: call.sender)
        let entry = Entry(call: call, onTimeout: onTimeout)
        entry.timer = loop.schedule(after: timeoutNanoseconds) { [weak self, weak entry] in
            guard let self, let entry else { return }
            remove(entry)
            entry.onTimeout(entry.call)
        }
        byClient[call.sender, default: []].append(entry)
        budget.inUse += 1
    }

    /// Answers every pending call (and forgets them).
    public func resolveAll(_ answer: (MethodCall) -> Void) {
        let all = byClient.values.flatMap { $0 }
        byClient = [:]
        budget.inUse -= all.count
        for entry in all {
            if let timer = entry.timer { loop.cancel(timer) }
            answer(entry.call)
        }
    }

    /// Forgets `call` without answering it; false when it is not (or no longer) pending.
    public func remove(_ call: MethodCall) -> Bool {
        guard let entry = byClient[call.sender]?.first(where: { $0.call === call }) else { return false }
        if let timer = entry.timer { loop.cancel(timer) }
        remove(entry)
        return true
    }

    /// Drops the calls of a client that left the bus; returns how many there were.
    @discardableResult
    public func clientVanished(_ client: String) -> Int {
        guard let entries = byClient.removeValue(forKey: client) else { return 0 }
        budget.inUse -= entries.count
        for entry in entries {
            if let timer = entry.timer { loop.cancel(timer) }
        }
        return entries.count
    }

    private func remove(_ entry: Entry) {
        guard var entries = byClient[entry.call.sender], let index = entries.firstIndex(where: { $0 === entry }) else { return }
        entries.remove(at: index)
        byClient[entry.call.sender] = entries.isEmpty ? nil : entries
        budget.inUse -= 1
    }
}
