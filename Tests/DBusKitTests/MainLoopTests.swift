import EventLoop
import Glibc
import Synchronization
import XCTest

final class MainLoopTests: XCTestCase {
    func testTimersFireInOrderAndRepeatUntilCancelled() throws {
        let loop = try MainLoop()
        var events: [String] = []
        loop.schedule(after: 30_000_000) { events.append("30ms") }
        loop.schedule(after: 10_000_000) { events.append("10ms") }
        var ticks = 0
        var repeating: LoopTimer?
        repeating = loop.schedule(after: 5_000_000, repeats: true) {
            ticks += 1
            if ticks == 3, let timer = repeating { loop.cancel(timer) }
        }
        let cancelled = loop.schedule(after: 1_000_000) { events.append("cancelled") }
        loop.cancel(cancelled)
        loop.schedule(after: 50_000_000) { loop.quit(status: 7) }
        XCTAssertEqual(loop.run(), 7)
        XCTAssertEqual(events, ["10ms", "30ms"])
        XCTAssertEqual(ticks, 3)
    }

    func testManyTimersFireInDeadlineOrderAndCancelledOnesLeaveTheHeap() throws {
        for waitCall in [MainLoop.WaitCall.epollPwait2, .epollPwait] {
            let loop = try MainLoop(waitCall: waitCall)
            var generator = SystemRandomNumberGenerator()
            var fired: [UInt64] = []
            var kept: [UInt64] = []
            var timers: [LoopTimer] = []
            for i in 0..<2_000 {
                let delay = UInt64.random(in: 0..<20, using: &generator) * 1_000_000
                nonisolated(unsafe) var timer: LoopTimer?
                timer = loop.schedule(after: delay) { fired.append(timer?.deadline ?? 0) }
                timers.append(timer!)
                if i % 3 == 0 { loop.cancel(timers[i]) } else { kept.append(timers[i].deadline) }
            }
            XCTAssertEqual(loop.scheduledTimers, kept.count)
            loop.schedule(after: 40_000_000) { loop.quit(status: 0) }
            XCTAssertEqual(loop.run(), 0)
            XCTAssertEqual(loop.scheduledTimers, 0, "\(waitCall)")
            XCTAssertEqual(Set(fired), Set(kept), "\(waitCall): every kept timer fired once, no cancelled one")
            XCTAssertEqual(fired.count, kept.count)
            XCTAssertTrue(fired == fired.sorted(), "\(waitCall): timers fire in deadline order")
        }
    }

    func testALongCancelledTimerIsGoneAtOnce() throws {
        let loop = try MainLoop()
        for _ in 0..<10_000 {
            let timer = loop.schedule(after: 3_600_000_000_000) {}
            loop.cancel(timer)
        }
        XCTAssertEqual(loop.scheduledTimers, 0)
    }

    func testTheLegacyWaitHonoursSubMillisecondTimersAndDescriptors() throws {
        let loop = try MainLoop(waitCall: .epollPwait)
        XCTAssertEqual(loop.waitCall, .epollPwait)
        let start = MonotonicClock.now()
        var at: UInt64 = 0
        loop.schedule(after: 300_000) { at = MonotonicClock.now(); loop.quit(status: 0) }
        XCTAssertEqual(loop.run(), 0)
        XCTAssertGreaterThanOrEqual(at - start, 300_000, "never early")
        XCTAssertLessThan(at - start, 1_000_000_000)
    }

    func testEndOfTurnRunsAfterReadyWorkAndMayQueueMore() throws {
        let loop = try MainLoop()
        var order: [String] = []
        loop.schedule(after: 0) {
            order.append("timer")
            loop.atEndOfTurn {
                order.append("end1")
                loop.atEndOfTurn { order.append("end2"); loop.quit(status: 0) }
            }
        }
        _ = loop.run()
        XCTAssertEqual(order, ["timer", "end1", "end2"])
    }

    func testDescriptorSourcesShareAnFDAndCanBePaused() throws {
        let loop = try MainLoop()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        var reads = 0
        var writes = 0
        let reader = try loop.watch(fd: fds[0], interest: .readable) { _ in
            var byte: UInt8 = 0
            _ = read(fds[0], &byte, 1)
            reads += 1
            if reads == 2 { loop.quit(status: 0) }
        }
        let writer = try loop.watch(fd: fds[1], interest: .writable) { _ in
            writes += 1
            var byte: UInt8 = 1
            _ = write(fds[1], &byte, 1)
        }
        loop.schedule(after: 1_000_000) { try? loop.setInterest(writer, []) }
        var byte: UInt8 = 2
        _ = write(fds[1], &byte, 1)
        _ = loop.run()
        XCTAssertGreaterThanOrEqual(reads, 2)
        XCTAssertGreaterThanOrEqual(writes, 1)
        loop.remove(reader)
        loop.remove(writer)
        XCTAssertFalse(reader.isActive)
    }

    func testChannelDeliversFromOtherThreadsOnTheLoop() throws {
        let loop = try MainLoop()
        var received: [Int] = []
        let channel = try LoopChannel<Int>(loop: loop) { value in
            received.append(value)
            if received.count == 100 { loop.quit(status: 0) }
        }
        let sender = channel.sender
        let thread = Thread { for i in 0..<100 { sender.send(i) } }
        thread.start()
        loop.schedule(after: 5_000_000_000) { loop.quit(status: 1) }
        XCTAssertEqual(loop.run(), 0)
        XCTAssertEqual(received, Array(0..<100))
    }

    func testSignalsArriveThroughTheLoop() throws {
        let loop = try MainLoop()
        var got: Int32 = 0
        try loop.handleSignals([SIGUSR1]) { signal in
            got = signal
            loop.quit(status: 0)
        }
        // To this thread: in a test process other threads exist that do not block it.
        loop.schedule(after: 1_000_000) { raise(SIGUSR1) }
        loop.schedule(after: 5_000_000_000) { loop.quit(status: 1) }
        XCTAssertEqual(loop.run(), 0)
        XCTAssertEqual(got, SIGUSR1)
    }
}

final class WorkerThreadTests: XCTestCase {
    func testJobsRunInOrderOffTheCallingThreadAndDrainWaits() throws {
        let worker = try WorkerThread()
        worker.drain()  // before any job: returns at once
        let log = Mutex<[Int]>([])
        let caller = pthread_self()
        let offThread = Atomic<Bool>(true)
        for i in 0..<50 {
            worker.async {
                if pthread_equal(pthread_self(), caller) != 0 { offThread.store(false, ordering: .relaxed) }
                usleep(100)
                log.withLock { $0.append(i) }
            }
        }
        worker.drain()
        XCTAssertEqual(log.withLock { $0 }, Array(0..<50))
        XCTAssertTrue(offThread.load(ordering: .relaxed))
    }
}
