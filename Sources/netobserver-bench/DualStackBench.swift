import NetAddress
import ProbeRules
import Simulation
import Timekeeping

/// INTERFACE.md "Every path"'s figures that depend on the cores' rules alone, on the virtual clock in
/// the one simulated world (a dual-stack network, `Scenario.dualStack`): no root, no network, the same
/// result every run.
struct DualStackBench {
    let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 2)

    func run() -> Bool {
        var ok = true
        func headline(
            _ timeline: [(at: UInt64, fault: Scenario.Fault)], seconds: UInt64, seed: UInt64 = 1
        )
            -> Simulation.Headline
        {
            let simulation = Simulation(
                .dualStack(seed: seed, settings: settings, seconds: seconds, timeline: timeline))
            for violation in simulation.run().prefix(3) {
                print("dual stack: \(violation)")
                ok = false
            }
            return simulation.headline
        }
        // First full: both healthy, and each family blackholed from the start (median of 101 seeds).
        func firstFull(_ timeline: [(at: UInt64, fault: Scenario.Fault)]) -> Double {
            let times = (1...101 as ClosedRange<UInt64>).compactMap {
                headline(timeline, seconds: 10, seed: $0).firstFull
            }
            .sorted()
            return times.isEmpty ? .infinity : Double(times[times.count / 2].nanoseconds) / 1e6
        }
        let healthy = firstFull([])
        for family in IPFamily.allCases {
            let dead = firstFull([(0, .blackhole(family, true))])
            print(
                "dual stack: first full with \(family) blackholed from the start \(rounded(dead)) ms vs \(rounded(healthy)) ms "
                    + "with both healthy: \(rounded(dead / healthy))× (goal ≤ 1.1×)")
        }
        // Ten minutes of IPv6 blackholed and restored every 30 s.
        let flapping = stride(from: 30_000, to: 600_000, by: 60_000).flatMap {
            [(UInt64($0), Scenario.Fault.blackhole(.v6, true)), (UInt64($0 + 30_000), .blackhole(.v6, false))]
        }
        let flapped = headline(flapping, seconds: 600)
        print(
            "dual stack: 10 minutes of IPv6 flapping every 30 s: \(flapped.transitions) Connectivity and "
                + "\(flapped.statusChanges) Status transitions (goal 0)")
        // Probes with every family full vs one family, over 10 minutes at Interval 1000.
        let both = headline([], seconds: 600)
        let sent = (both.probes[.v4] ?? 0) + (both.probes[.v6] ?? 0)
        let single = both.probes[.v6] ?? 1
        print(
            "dual stack: probes in 10 minutes with both families full \(sent) vs one family's \(single): "
                + "\(rounded(Double(sent) / Double(single)))× (goal ≤ \(rounded(1 + Double(settings.intervalMilliseconds) / 30000))×)"
        )
        return ok
    }

    private func rounded(_ value: Double) -> String {
        value.isFinite ? "\(Double(Int(value * 1000)) / 1000)" : "∞"
    }
}
