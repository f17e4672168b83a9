import EventLoop
import NetAddress
import NetCore
import Probe
import ProbeRules
import Reachability
import Timekeeping
import TrafficCensus

/// `netobserver-bench sample-cost HOST SOURCE [N]`, run inside a namespace: N full dumps of this
/// machine's connections from SOURCE (never a reused one); prints the median and largest CPU per
/// dump and what share of a core the schedule (one dump per interface per 500 ms, or 125 × its
/// cost, whatever the number of targets) gives that.
struct TrafficSampleBench {
    let host: IPAddress
    let source: IPAddress
    let count: Int

    func run() throws {
        let loop = try MainLoop()
        let sampler = try TrafficSampler(loop: loop)
        var costs: [Duration] = []
        var connections = 0
        for _ in 0..<max(count, 1) {
            let (sample, cost) = sampler.sampleFresh(host: host, sources: [source])
            guard let sample else { continue }
            connections = sample.connections
            costs.append(cost)
        }
        costs.sort()
        guard let median = costs.isEmpty ? nil : costs[costs.count / 2], let largest = costs.last else {
            print("sample-cost: no sample could be taken")
            return
        }
        let period = max(TrafficWatch.busyPeriod, median * TrafficWatch.costFactor)
        let hundredths = median * 100 * 100 / period
        print(
            "sample-cost: connections=\(connections) samples=\(costs.count) median_us=\(median.microseconds) max_us=\(largest.microseconds) "
                + "period_ms=\(period.milliseconds) core_share_percent=\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
        )
    }
}
