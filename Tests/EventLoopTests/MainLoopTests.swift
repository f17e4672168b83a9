import EventLoop
import Glibc
import Synchronization
import TestTime
import Timekeeping
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
            var fired: [Instant] = []
            var kept: [Instant] = []
            var timers: [LoopTimer] = []
            for i in 0..<2_000 {
                let delay = Duration.milliseconds(UInt64.random(in: 0..<20, using: &generator))
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
        var at = Instant.origin
        loop.schedule(after: 300_000) {
            at = MonotonicClock.now(); loop.quit(status: 0)
        }
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
                loop.atEndOfTurn {
                    order.append("end2"); loop.quit(status: 0)
                }
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
        worker.drain() // before any job: returns at once
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

extension MainLoopTests {
    /// Defect 6: an event queued for a descriptor that was closed in the same turn must not
    /// reach a new source whose descriptor got the same number (in TCP mode, a stale EPOLLOUT
    /// read as "connected").
    func testAnEventForAClosedDescriptorNeverReachesItsReusedNumber() throws {
        let loop = try MainLoop()
        var first: [Int32] = [0, 0], second: [Int32] = [0, 0], fresh: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&first), 0)
        XCTAssertEqual(pipe(&second), 0)
        XCTAssertEqual(pipe(&fresh), 0)
        defer { for fd in first + fresh + [second[1]] { close(fd) } }
        var staleCalls = 0
        var secondSource: IOSource?
        // Both become readable, the first one first, so epoll returns them in that order.
        var byte: UInt8 = 1
        XCTAssertEqual(write(first[1], &byte, 1), 1)
        XCTAssertEqual(write(second[1], &byte, 1), 1)
        try loop.watch(fd: first[0], interest: .readable) { _ in
            guard let source = secondSource else { return }
            // The owner of the second pipe goes: out of the loop, then closed; a new, empty
            // pipe takes the very same descriptor number and is watched.
            loop.remove(source)
            secondSource = nil
            let reused = second[0]
            XCTAssertEqual(dup2(fresh[0], reused), reused)
            _ = try? loop.watch(fd: reused, interest: .readable) { _ in staleCalls += 1 }
            loop.atEndOfTurn { loop.quit(status: 0) }
        }
        secondSource = try loop.watch(fd: second[0], interest: .readable) { _ in }
        XCTAssertEqual(loop.run(), 0)
        XCTAssertEqual(staleCalls, 0, "the new, empty pipe was told it is readable")
        close(second[0])
    }

    /// A loop on a clock the test advances: timers fire when virtual time reaches them, not before.
    func testTimersFollowAnInjectedClock() throws {
        let now = Atomic<UInt64>(1_000)
        let loop = try MainLoop(clock: { Instant(nanoseconds: now.load(ordering: .relaxed)) })
        var fired: [String] = []
        loop.schedule(after: 500) { fired.append("after 500") }
        loop.schedule(at: 2_000) { fired.append("at 2000") }
        loop.runDueWork()
        XCTAssertEqual(fired, [])
        now.store(1_499, ordering: .relaxed)
        loop.runDueWork()
        XCTAssertEqual(fired, [])
        now.store(1_500, ordering: .relaxed)
        loop.runDueWork()
        XCTAssertEqual(fired, ["after 500"])
        now.store(10_000, ordering: .relaxed)
        loop.runDueWork()
        XCTAssertEqual(fired, ["after 500", "at 2000"])
        XCTAssertEqual(loop.now(), 10_000)
    }

    /// A timer with leeway fires on the first turn after its deadline that something else woke, and
    /// wakes the loop itself only when its leeway is over; repeating, it counts from when it ran.
    func testALenientTimerRidesOnOtherWakeUps() throws {
        let loop = try MainLoop()
        var lenientRuns: [Instant] = []
        var punctualRan = Instant.origin
        let lenient = loop.schedule(after: 20_000_000, leeway: 1_000_000_000, repeats: true) {
            lenientRuns.append(loop.now())
        }
        loop.schedule(after: 60_000_000) {
            punctualRan = loop.now(); loop.quit(status: 0)
        }
        XCTAssertEqual(loop.scheduledTimers, 2)
        XCTAssertEqual(loop.run(), 0)
        XCTAssertEqual(lenientRuns.count, 1, "it ran once, on the punctual timer's turn")
        XCTAssertGreaterThanOrEqual(lenientRuns.first ?? 0, punctualRan, "it waited for a turn it did not cause")
        XCTAssertEqual(loop.scheduledTimers, 1, "repeating, it stays")
        loop.cancel(lenient)
        XCTAssertEqual(loop.scheduledTimers, 0)

        let started = loop.now()
        var aloneRan = Instant.origin
        loop.schedule(after: 10_000_000, leeway: 100_000_000) { aloneRan = loop.now() }
        let cancelled = loop.schedule(after: 1_000, leeway: 1_000) { XCTFail("a cancelled lenient timer never runs") }
        loop.cancel(cancelled)
        loop.schedule(after: 300_000_000) { loop.quit(status: 1) }
        XCTAssertEqual(loop.run(), 1)
        XCTAssertGreaterThanOrEqual(
            aloneRan - started, 110_000_000, "alone, it woke the loop only when its leeway was over")
        XCTAssertEqual(loop.scheduledTimers, 0)
    }

    func testDescriptorsCloseOnceWithTheirOwnerAndSyscallsRetryInterrupts() throws {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        do {
            let owned = Descriptor(owning: ends[0])
            XCTAssertEqual(fcntl(owned.raw, F_GETFD), FD_CLOEXEC == 0 ? 0 : fcntl(owned.raw, F_GETFD))
        }
        XCTAssertEqual(fcntl(ends[0], F_GETFD), -1, "closed when its owner went")
        XCTAssertEqual(errno, EBADF)
        close(ends[1])
        var calls = 0
        let result = try Syscall.retrying("test") { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 42
        }
        XCTAssertEqual(result, 42)
        XCTAssertEqual(calls, 3)
        XCTAssertThrowsError(try Syscall.retrying("open") { open("/nonexistent/netobserver", O_RDONLY) }) { error in
            XCTAssertEqual((error as? SystemError)?.errno, ENOENT)
            XCTAssertEqual((error as? SystemError)?.call, "open")
        }
    }
}
