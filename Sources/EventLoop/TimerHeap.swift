/// The loop's timers ordered by deadline: the next one is read in O(1),
/// insertion and removal (including cancellation) cost O(log n), so a turn
/// costs the same however many timers are pending.
struct TimerHeap {
    private var timers: [LoopTimer] = []

    var isEmpty: Bool { timers.isEmpty }
    var count: Int { timers.count }
    var first: LoopTimer? { timers.first }

    mutating func insert(_ timer: LoopTimer) {
        precondition(timer.heapIndex < 0, "timer is already scheduled")
        timer.heapIndex = timers.count
        timers.append(timer)
        siftUp(timers.count - 1)
    }

    /// Removes `timer` if it is in the heap.
    mutating func remove(_ timer: LoopTimer) {
        let index = timer.heapIndex
        guard index >= 0, index < timers.count, timers[index] === timer else { return }
        let last = timers.count - 1
        if index != last { swapAt(index, last) }
        timers.removeLast()
        timer.heapIndex = -1
        guard index < timers.count else { return }
        siftDown(index)
        siftUp(index)
    }

    private func earlier(_ a: Int, _ b: Int) -> Bool {
        timers[a].deadline < timers[b].deadline
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        timers.swapAt(a, b)
        timers[a].heapIndex = a
        timers[b].heapIndex = b
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard earlier(child, parent) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < timers.count else { return }
            var smallest = left
            if left + 1 < timers.count, earlier(left + 1, left) { smallest = left + 1 }
            guard earlier(smallest, parent) else { return }
            swapAt(smallest, parent)
            parent = smallest
        }
    }
}
