import HelperProcess
import EventLoop
import Glibc

/// Saves and re-reads the settings file off the loop, in order, in the blocking helper.
///
/// Everything here is called on the loop and its completions run on the loop.
/// A save asked for while another is being written is folded into the next
/// write; each caller learns whether the write that carried its values worked.
public final class StateSaver {
    public let store: StateStore
    private let helper: BlockingHelper

    /// Set when the file could not be read nor moved aside: every save then fails with it, and the file stays.
    public var refusing: SystemError?
    private var latest = StoredState()
    private var requested = 0
    private var writing: Int?
    private var waiting: [(generation: Int, completion: (SystemError?) -> Void)] = []

    init(store: StateStore, helper: BlockingHelper) {
        self.store = store
        self.helper = helper
    }

    /// Writes `state` (the whole file); `completion` gets nil once it is on disk, or the error.
    public func save(_ state: StoredState, completion: @escaping (SystemError?) -> Void) {
        if let refusing { return completion(refusing) }
        latest = state
        requested += 1
        waiting.append((requested, completion))
        if writing == nil { startWrite() }
    }

    /// Re-reads the file after every write asked for so far.
    /// `refused`: the file could not be read at all (its state is not the file's).
    public func reload(
        _ completion: @escaping (_ state: StoredState, _ problems: [String], _ refused: AtomicFile.Refused?) -> Void
    ) {
        let store = store
        helper.read(StateStore.fileName, in: store.directory, maximumSize: StateStore.maximumSize, on: .settings) {
            read in
            let (state, problems, refused) = store.loaded(read.map { $0.map { $0[...] } })
            completion(state, problems, refused)
        }
    }

    /// Waits for the work handed over so far (for a clean exit); completions do not run.
    public func finish() {
        helper.drain(.settings)
    }

    private func startWrite() {
        let generation = requested
        writing = generation
        let text = StateStore.text(of: latest)
        // Never a file the service would refuse to read back.
        guard text.utf8.count <= StateStore.maximumSize else {
            return saved(generation, StateStore.tooLarge)
        }
        helper.write(text, to: StateStore.fileName, in: store.directory, on: .settings) { [weak self] error in
            self?.saved(generation, error)
        }
    }

    private func saved(_ generation: Int, _ error: SystemError?) {
        writing = nil
        let done = waiting.filter { $0.generation <= generation }
        waiting.removeAll { $0.generation <= generation }
        if requested > generation { startWrite() }
        for entry in done { entry.completion(error) }
    }
}
