import EventLoop
import Synchronization

/// Saves settings off the main loop: the loop hands over the latest values and
/// returns at once; a serial worker writes them (temp file, fsync, rename).
/// Values handed over while a write is in progress are coalesced into one write.
public final class StateSaver: Sendable {
    private let store: StateStore
    private let worker: WorkerThread
    private let pending = Mutex<[MonitorSettings.Key: String]?>(nil)
    private let onError: @Sendable (String) -> Void

    public init(store: StateStore, onError: @escaping @Sendable (String) -> Void) throws(SystemError) {
        worker = try WorkerThread()
        self.store = store
        self.onError = onError
    }

    public func save(_ values: [MonitorSettings.Key: String]) {
        let wasIdle = pending.withLock { slot in
            defer { slot = values }
            return slot == nil
        }
        guard wasIdle else { return }
        worker.async { [self] in
            while let values = pending.withLock({ slot -> [MonitorSettings.Key: String]? in
                defer { slot = nil }
                return slot
            }) {
                do {
                    try store.save(values)
                } catch {
                    onError("cannot save settings in \(store.path): \(error)")
                }
            }
        }
    }

    /// Waits for the writes handed over so far (for a clean exit).
    public func finish() {
        worker.drain()
    }
}
