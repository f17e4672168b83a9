import Glibc
import Simulation

/// Runs randomized simulation scenarios for a fixed number and reports how many per second.
struct SimulationBench {
    let scenarios: Int

    func run() -> Bool {
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        var failed = 0
        var events = 0
        for seed in 1...UInt64(scenarios) {
            let simulation = Simulation(Scenario.random(seed: seed))
            let violations = simulation.run()
            events += simulation.summary.events
            if let first = violations.first {
                failed += 1
                print("simulation: \(first)")
            }
        }
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &end)
        let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
        print("simulation: \(scenarios) scenarios, \(events) events, \(failed) failed, in \(Double(Int(seconds * 100)) / 100) s: "
              + "\(Int(Double(scenarios) / seconds)) scenarios/s, \(Int(Double(events) / seconds)) events/s")
        return failed == 0
    }
}
