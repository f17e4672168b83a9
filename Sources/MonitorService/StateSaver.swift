import EventLoop

/// Saves and re-reads the settings file off the loop, in order, on one worker.
///
/// Everything here is called on the loop and its completions run on the loop.
/// A save asked for while another is being written is folded into the next
/// write; each caller learns whether the write that carried its values worked.
public final class StateSaver {
    public let store: StateStore
    private let worker: WorkerThread
    private var results: LoopChannel<Outcome>!

    private enum Outcome: Sendable {
        case saved(generation: Int, error: SystemError?)
        case loaded(state: StoredState, problems: [String])
    }

    private var latest = StoredState()
    private var requested = 0
    private var writing: Int?
    private var waiting: [(generation: Int, completion: (SystemError?) -> Void)] = []
    private var reloads: [(_ state: StoredState, _ problems: [String]) -> Void] = []

    private let loop: MainLoop

    public init(store: StateStore, loop: MainLoop) throws(SystemError) {
        self.store = store
        self.loop = loop
        worker = try WorkerThread()
        results = try LoopChannel(loop: loop) { [unowned self] outcome in finished(outcome) }
    }

    /// Writes `state` (the whole file); `completion` gets nil once it is on disk, or the error.
    public func save(_ state: StoredState, completion: @escaping (SystemError?) -> Void) {
        latest = state
        requested += 1
        waiting.append((requested, completion))
        if writing == nil { startWrite() }
    }

    /// Re-reads the file after every write asked for so far.
    public func reload(_ completion: @escaping (_ state: StoredState, _ problems: [String]) -> Void) {
        reloads.append(completion)
        let store = store
        let sender = results.sender
        worker.async {
            let (state, problems) = store.loadState()
            sender.send(.loaded(state: state, problems: problems))
        }
    }

    /// Waits for the work handed over so far (for a clean exit); completions do not run.
    public func finish() {
        worker.drain()
    }

    private func startWrite() {
        let generation = requested
        let state = latest
        let store = store
        let sender = results.sender
        writing = generation
        worker.async(afterTurnOf: loop) {
            do throws(SystemError) {
                try store.save(state)
                sender.send(.saved(generation: generation, error: nil))
            } catch {
                sender.send(.saved(generation: generation, error: error))
            }
        }
    }

    private func finished(_ outcome: Outcome) {
        switch outcome {
        case .saved(let generation, let error):
            writing = nil
            let done = waiting.filter { $0.generation <= generation }
            waiting.removeAll { $0.generation <= generation }
            if requested > generation { startWrite() }
            for entry in done { entry.completion(error) }
        case .loaded(let state, let problems):
            guard !reloads.isEmpty else { return }
            reloads.removeFirst()(state, problems)
        }
    }
}
