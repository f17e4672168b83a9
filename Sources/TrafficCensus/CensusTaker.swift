import EventLoop
import NetAddress
import ReachabilityRules
import ProbeRules
import Timekeeping

/// A census that takes the samples too dear for the loop, in the daemon's blocking helper: each
/// with the CPU it took and what the last walk of the kernel's sockets cost, which the loop's own
/// census adopts to choose where its next sample is taken.
public final class CensusTaker {
    private let census: ConnectionCensus

    public init() throws(SystemError) {
        census = try ConnectionCensus()
    }

    public func sample(host: IPAddress, route: HostRoute?, sources: [IPAddress], now: Instant) -> TrafficSampler.Taken {
        let (result, cost) = TrafficSampler.measured {
            census.sample(host: host, route: route, sources: sources, now: now, wait: TrafficSampler.dumpWait)
        }
        return TrafficSampler.Taken(result: result, cost: cost, dumpCost: census.lastDumpCost)
    }
}
