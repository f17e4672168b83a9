/// Things due at virtual times, earliest first; equal times in the order they were added.
import MonitorRules
import Timekeeping
struct EventQueue<Event> {
    private var heap: [(time: Instant, order: UInt64, event: Event)] = []
    private var added: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    /// Read in place (`heap.first` would copy the whole entry, its event's payload included).
    var nextTime: Instant? { heap.isEmpty ? nil : heap[0].time }

    mutating func add(_ event: Event, at time: Instant) {
        added += 1
        heap.append((time, added, event))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() -> (time: Instant, event: Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && precedes(left, smallest) { smallest = left }
            if right < heap.count && precedes(right, smallest) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return (first.time, first.event)
    }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        (heap[a].time, heap[a].order) < (heap[b].time, heap[b].order)
    }
}
