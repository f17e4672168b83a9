import Simulation
import XCTest

final class SimulationTests: XCTestCase {
    func testRandomScenariosKeepEveryRule() {
        let count = Int(ProcessInfo.processInfo.environment["SIMULATION_SCENARIOS"] ?? "") ?? 2000
        let first = UInt64(ProcessInfo.processInfo.environment["SIMULATION_SEED"] ?? "") ?? 1
        var failures: [Simulation.Violation] = []
        let started = Date()
        for seed in first..<first + UInt64(count) {
            let simulation = Simulation(Scenario.random(seed: seed))
            // One run in ten also checks the Connectivity the pace reads (found without text), after every step.
            simulation.checksTextlessConnectivity = seed % 10 == 0
            if ProcessInfo.processInfo.environment["SIMULATION_TRACE"] != nil { simulation.trace = { print($0) } }
            failures += simulation.run()
            if failures.count >= 10 { break }
        }
        let took = Date().timeIntervalSince(started)
        print("simulation: \(count) scenarios in \(String(format: "%.2f", took)) s (\(Int(Double(count) / took))/s)")
        for failure in failures {
            XCTFail("\(failure) — rerun with SIMULATION_SEED=\(failure.seed) SIMULATION_SCENARIOS=1")
        }
    }
}
