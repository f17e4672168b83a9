import EventLoop
import Timekeeping

/// The life of a run that ends once — a neighbour check, the probe past the gateway: its answer goes
/// to `completion` once, and never after `cancel`; ending either way cancels its timer, stops its watch
/// and lets its socket go (`release`, which the run sets once it is whole).
final class OneShotRun<Answer> {
    private let loop: MainLoop
    private var completion: ((Answer) -> Void)?
    private var timer: LoopTimer?
    private var source: IOSource?
    var release: () -> Void = {}

    init(loop: MainLoop, completion: @escaping (Answer) -> Void) {
        self.loop = loop
        self.completion = completion
    }

    /// Watches the run's socket (one watch: a new one replaces it).
    func watch(fd: Int32, interest: IOEvents, _ handler: @escaping (IOEvents) -> Void) {
        if let source { loop.remove(source) }
        source = try? loop.watch(fd: fd, interest: interest, handler: handler)
    }

    /// The run's next deadline (one timer: a new one replaces it).
    func schedule(after delay: Duration, _ handler: @escaping () -> Void) {
        if let timer { loop.cancel(timer) }
        timer = loop.schedule(after: delay, handler: handler)
    }

    /// Ends the run with `answer`, once.
    func finish(_ answer: Answer) {
        let completion = self.completion
        self.completion = nil
        close()
        completion?(answer)
    }

    /// Nothing more is heard; no completion.
    func cancel() {
        completion = nil
        close()
    }

    /// The run is going away (its deinit): the timer and the watch go; its socket goes with it.
    func abandon() {
        completion = nil
        stopTimer()
        stopWatch()
    }

    private func close() {
        stopTimer()
        letSocketGo()
    }

    /// Stops the watch and lets the socket go; the timer stays, so the run still ends by its deadline.
    func letSocketGo() {
        stopWatch()
        release()
    }

    private func stopTimer() {
        if let timer { loop.cancel(timer) }
        timer = nil
    }

    private func stopWatch() {
        if let source { loop.remove(source) }
        source = nil
    }
}
