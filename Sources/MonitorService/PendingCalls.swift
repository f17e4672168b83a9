import DBusKit
import EventLoop
import ProbeRules
import Timekeeping

/// The Waits or the Checks of one target that are answered later, each with its own
/// deadline, counted in the service's `PendingBudget` (which decides whether a call may
/// be kept at all). A client that leaves the bus has its calls dropped without an answer.
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
    private let kind: PendingBudget.Kind
    private let budget: PendingBudget
    private var byClient: [String: [Entry]] = [:]

    public init(loop: MainLoop, kind: PendingBudget.Kind, budget: PendingBudget) {
        self.loop = loop
        self.kind = kind
        self.budget = budget
    }

    deinit {
        for entry in byClient.values.joined() {
            if let timer = entry.timer { loop.cancel(timer) }
            budget.release(entry.call.sender, kind)
        }
    }

    public func count(for client: String) -> Int { byClient[client]?.count ?? 0 }

    /// Keeps `call` (which the budget admitted) until `resolveAll`, `remove` or its deadline.
    public func add(_ call: MethodCall, timeout: Duration, onTimeout: @escaping (MethodCall) -> Void) {
        let entry = Entry(call: call, onTimeout: onTimeout)
        entry.timer = loop.schedule(after: timeout) { [weak self, weak entry] in
            guard let self, let entry else { return }
            remove(entry)
            entry.onTimeout(entry.call)
        }
        byClient[call.sender, default: []].append(entry)
        budget.take(call.sender, kind)
    }

    /// Answers every pending call (and forgets them).
    public func resolveAll(_ answer: (MethodCall) -> Void) {
        let all = byClient.values.flatMap { $0 }
        byClient = [:]
        for entry in all {
            if let timer = entry.timer { loop.cancel(timer) }
            budget.release(entry.call.sender, kind)
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
        for entry in entries {
            if let timer = entry.timer { loop.cancel(timer) }
            budget.release(client, kind)
        }
        return entries.count
    }

    private func remove(_ entry: Entry) {
        guard var entries = byClient[entry.call.sender], let index = entries.firstIndex(where: { $0 === entry }) else {
            return
        }
        entries.remove(at: index)
        byClient[entry.call.sender] = entries.isEmpty ? nil : entries
        budget.release(entry.call.sender, kind)
    }
}
