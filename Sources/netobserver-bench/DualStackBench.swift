import NetAddress
import ProbeRules
import Simulation
import Timekeeping

/// INTERFACE.md "Every path"'s figures that depend on the cores' rules alone, on the virtual clock
/// through the daemon's driver (`DualStackRun`): no root, no network, the same result every run.
struct DualStackBench {
    let settings = ProbeSettings(intervalMilliseconds: 1000, timeoutMilliseconds: 1000, failureThreshold: 2)

    func run() -> Bool {
        var ok = true
        func figures(_ faults: [DualStackRun.Fault], seconds: UInt64, seed: UInt64 = 1) -> DualStackRun.Figures {
            let figures = DualStackRun(
                settings: settings, seed: seed, faults: faults, durationMilliseconds: seconds * 1000
            ).run()
            for violation in figures.violations.prefix(3) {
                print("dual stack: \(violation)")
                ok = false
            }
            return figures
        }
        // First full: both healthy, and each family blackholed from the start (median of 101 seeds).
        func firstFull(_ faults: [DualStackRun.Fault]) -> Double {
            let times = (1...101 as ClosedRange<UInt64>).compactMap { figures(faults, seconds: 10, seed: $0).firstFull }
                .sorted()
            return times.isEmpty ? .infinity : Double(times[times.count / 2].nanoseconds) / 1e6
        }
        let healthy = firstFull([])
        for family in IPFamily.allCases {
            let dead = firstFull([.init(atMilliseconds: 0, family, .blackhole)])
            print(
                "dual stack: first full with \(family) blackholed from the start \(rounded(dead)) ms vs \(rounded(healthy)) ms "
                    + "with both healthy: \(rounded(dead / healthy))× (goal ≤ 1.1×)")
        }
        // Ten minutes of IPv6 blackholed and restored every 30 s.
        let flapping = stride(from: 30_000, to: 600_000, by: 60_000).flatMap {
            [
                DualStackRun.Fault(atMilliseconds: UInt64($0), .v6, .blackhole),
                DualStackRun.Fault(atMilliseconds: UInt64($0 + 30_000), .v6, .restore),
            ]
        }
        let flapped = figures(flapping, seconds: 600)
        print(
            "dual stack: 10 minutes of IPv6 flapping every 30 s: \(flapped.headlineTransitions) Connectivity and "
                + "\(flapped.statusChanges) Status transitions (goal 0)")
        // Probes with every family full vs one family, over 10 minutes at Interval 1000.
        let both = figures([], seconds: 600)
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
