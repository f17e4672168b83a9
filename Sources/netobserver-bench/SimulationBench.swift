import Dispatch
import Glibc
import Simulation
import Synchronization

/// Runs randomized simulation scenarios for a fixed number and reports how many per second: on
/// one thread per core (scenarios are independent, each replayed by its seed alone), and per core,
/// from the CPU time the threads spent; for the whole mix and for its one-family and dual-stack
/// scenarios apart, with the events each took.
struct SimulationBench {
    let scenarios: Int
    /// How many threads run them (nil: one per core).
    var threads: Int?

    /// What the threads share: the next seed to run, and what the runs found.
    private final class Batch: Sendable {
        let nextSeed = Atomic<UInt64>(1)
        let totals = Mutex(Totals())
    }

    private struct Totals {
        var events = 0
        var cpuSeconds = 0.0
        var failures: [(seed: UInt64, violation: String)] = []
        /// The one-family scenarios' (0) and the dual-stack ones' (1) count, events and CPU seconds.
        var kinds = [Kind(), Kind()]
    }

    private struct Kind {
        var scenarios = 0
        var events = 0
        var cpuSeconds = 0.0
    }

    func run() -> Bool {
        let threads = max(1, self.threads ?? sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let batch = Batch()
        let last = UInt64(scenarios)
        let start = Self.seconds(CLOCK_MONOTONIC)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            var own = Totals()
            let cpuStart = Self.seconds(CLOCK_THREAD_CPUTIME_ID)
            while true {
                let seed = batch.nextSeed.add(1, ordering: .relaxed).oldValue
                guard seed <= last else { break }
                let scenarioStart = Self.seconds(CLOCK_THREAD_CPUTIME_ID)
                let scenario = Scenario.random(seed: seed)
                let simulation = Simulation(scenario)
                let violations = simulation.run()
                own.events += simulation.summary.events
                let kind = scenario.family == .any ? 1 : 0
                own.kinds[kind].scenarios += 1
                own.kinds[kind].events += simulation.summary.events
                own.kinds[kind].cpuSeconds += Self.seconds(CLOCK_THREAD_CPUTIME_ID) - scenarioStart
                if let first = violations.first { own.failures.append((seed, "\(first)")) }
            }
            own.cpuSeconds = Self.seconds(CLOCK_THREAD_CPUTIME_ID) - cpuStart
            batch.totals.withLock { totals in
                totals.events += own.events
                totals.cpuSeconds += own.cpuSeconds
                totals.failures += own.failures
                for kind in 0..<2 {
                    totals.kinds[kind].scenarios += own.kinds[kind].scenarios
                    totals.kinds[kind].events += own.kinds[kind].events
                    totals.kinds[kind].cpuSeconds += own.kinds[kind].cpuSeconds
                }
            }
        }
        let seconds = Self.seconds(CLOCK_MONOTONIC) - start
        let totals = batch.totals.withLock { $0 }
        for failure in totals.failures.sorted(by: { $0.seed < $1.seed }) { print("simulation: \(failure.violation)") }
        print(
            "simulation: \(scenarios) scenarios, \(totals.events) events, \(totals.failures.count) failed, in "
                + "\(Self.rounded(seconds)) s on \(threads) threads: \(Int(Double(scenarios) / seconds)) scenarios/s, "
                + "\(Int(Double(totals.events) / seconds)) events/s; per core \(Int(Double(scenarios) / totals.cpuSeconds)) scenarios/s "
                + "(\(Self.rounded(totals.cpuSeconds)) s of CPU)")
        for (name, kind) in zip(["one-family", "dual-stack"], totals.kinds) where kind.scenarios > 0 {
            print(
                "simulation: \(name): \(kind.scenarios) scenarios, \(kind.events / kind.scenarios) events each; per core "
                    + "\(Int(Double(kind.scenarios) / kind.cpuSeconds)) scenarios/s, "
                    + "\(Int(Double(kind.events) / kind.cpuSeconds)) events/s")
        }
        return totals.failures.isEmpty
    }

    private static func seconds(_ clock: clockid_t) -> Double {
        var now = timespec()
        clock_gettime(clock, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    private static func rounded(_ value: Double) -> Double { Double(Int(value * 100)) / 100 }
}
