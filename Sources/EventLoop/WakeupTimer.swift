import Timekeeping

/// The one loop timer a driver keeps at its sans-I/O core's `nextWakeup`: moved only when
/// that deadline changes, cancelled when there is none, and when released.
public final class WakeupTimer {
    private let loop: MainLoop
    private var timer: LoopTimer?
    private var deadline: Instant?
    /// Runs on the loop when the deadline comes (the timer is disarmed by then).
    public var onFire: (() -> Void)?

    public init(loop: MainLoop) {
        self.loop = loop
    }

    deinit {
        if let timer { loop.cancel(timer) }
    }

    /// Keeps the timer at `new` (nil: none).
    public func arm(at new: Instant?) {
        guard new != deadline else { return }
        if let timer { loop.cancel(timer) }
        timer = nil
        deadline = new
        guard let new else { return }
        timer = loop.schedule(at: new) { [unowned self] in
            timer = nil
            deadline = nil
            onFire?()
        }
    }
}
