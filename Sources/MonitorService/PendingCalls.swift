import DBusKit
import EventLoop

/// Method calls answered later (Wait, Check), per client, with a per-client
/// limit and each call's own deadline. A client that leaves the bus has its
/// calls dropped without an answer.
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
    private var byClient: [String: [Entry]] = [:]

    public init(loop: MainLoop, limitPerClient: Int) {
        self.loop = loop
        self.limitPerClient = limitPerClient
    }

    public func count(for client: String) -> Int { byClient[client]?.count ?? 0 }

    /// Keeps `call` until `resolveAll` or its deadline; throws LimitsExceeded past the limit.
    public func add(_ call: MethodCall, timeoutNanoseconds: UInt64,
                    onTimeout: @escaping (MethodCall) -> Void) throws(DBusError) {
        guard count(for: call.sender) < limitPerClient else {
            throw .limitsExceeded("at most \(limitPerClient) pending calls per client")
        }
        let entry = Entry(call: call, onTimeout: onTimeout)
        entry.timer = loop.schedule(after: timeoutNanoseconds) { [weak self, weak entry] in
            guard let self, let entry else { return }
            remove(entry)
            entry.onTimeout(entry.call)
        }
        byClient[call.sender, default: []].append(entry)
    }

    /// Answers every pending call (and forgets them).
    public func resolveAll(_ answer: (MethodCall) -> Void) {
        let all = byClient.values.flatMap { $0 }
        byClient = [:]
        for entry in all {
            if let timer = entry.timer { loop.cancel(timer) }
            answer(entry.call)
        }
    }

    /// Drops the calls of a client that left the bus; returns how many there were.
    @discardableResult
    public func clientVanished(_ client: String) -> Int {
        guard let entries = byClient.removeValue(forKey: client) else { return 0 }
        for entry in entries {
            if let timer = entry.timer { loop.cancel(timer) }
        }
        return entries.count
    }

    private func remove(_ entry: Entry) {
        byClient[entry.call.sender]?.removeAll { $0 === entry }
        if byClient[entry.call.sender]?.isEmpty == true { byClient[entry.call.sender] = nil }
    }
}
