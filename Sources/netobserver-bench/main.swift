// netobserver-bench: measurements that need root and network namespaces
// (`make bench` runs it). Traffic stays inside namespaces it creates and removes.
import CLinux
import Glibc
import NetAddress
import NetCore
import Simulation

// A line at a time, also into a pipe: what a run said before it was stopped is not lost.
CLinux_line_buffer_stdout()

// `netobserver-bench simulate N [THREADS]`: the cores in virtual time (a thread per core unless told); needs neither root nor a network.
if CommandLine.arguments.count > 2, CommandLine.arguments[1] == "simulate" {
    let threads = CommandLine.arguments.count > 3 ? Int(CommandLine.arguments[3]) : nil
    exit(SimulationBench(scenarios: Int(CommandLine.arguments[2]) ?? 1000, threads: threads).run() ? 0 : 1)
}

// `netobserver-bench simulate-trace SEED`: one random scenario's run, every step told (for reading a failing seed).
if CommandLine.arguments.count > 2, CommandLine.arguments[1] == "simulate-trace",
    let seed = UInt64(CommandLine.arguments[2])
{
    let simulation = Simulation(Scenario.random(seed: seed))
    simulation.trace = { print($0) }
    let violations = simulation.run()
    for violation in violations { print("VIOLATION: \(violation)") }
    exit(violations.isEmpty ? 0 : 1)
}

// `netobserver-bench dual-stack`: every path's figures on the virtual clock; needs neither root nor a network.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "dual-stack" {
    exit(DualStackBench().run() ? 0 : 1)
}

// `netobserver-bench sample-cost HOST SOURCE [N]`: the traffic census's CPU per sample, where it runs.
if CommandLine.arguments.count > 3, CommandLine.arguments[1] == "sample-cost",
    let host = IPAddress(CommandLine.arguments[2]), let source = IPAddress(CommandLine.arguments[3])
{
    let count = CommandLine.arguments.count > 4 ? Int(CommandLine.arguments[4]) ?? 20 : 20
    try TrafficSampleBench(host: host, source: source, count: count).run()
    exit(0)
}

guard geteuid() == 0 else {
    print("netobserver-bench: needs root (network namespaces); skipped")
    exit(0)
}

// `netobserver-bench nat64|detection|portal|blame [DAEMON]`: the NAT64 prefix's figures, the detection figures,
// portal truth's, or where it broke's, alone.
/// One of the monitor's benches alone; its namespaces go with it when it returns (exit runs no deinit).
func runMonitorBench(_ which: String, daemon: String) throws {
    let bench = try MonitorBench(daemonPath: daemon, chain: which == "blame")
    defer {
        bench.stop()
        bench.topology.remove()
    }
    switch which {
    case "nat64": try bench.runNat64()
    case "portal": try bench.runPortal()
    case "blame": try bench.runWhereItBroke()
    default: try bench.runDetection()
    }
}

if CommandLine.arguments.count > 1, ["nat64", "detection", "portal", "blame"].contains(CommandLine.arguments[1]) {
    let here = String(
        CommandLine.arguments[0].prefix(
            upTo: CommandLine.arguments[0].lastIndex(of: "/") ?? CommandLine.arguments[0].startIndex))
    try runMonitorBench(
        CommandLine.arguments[1],
        daemon: CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : here + "/netobserverd")
    exit(0)
}

try ReachabilityBench().run()
try ProbeBench().run()
// The daemon under test: the path given, else netobserverd beside this program.
let daemon =
    CommandLine.arguments.count > 1
    ? CommandLine.arguments[1]
    : String(
        CommandLine.arguments[0].prefix(
            upTo: CommandLine.arguments[0].lastIndex(of: "/") ?? CommandLine.arguments[0].startIndex)) + "/netobserverd"
try MonitorBench(daemonPath: daemon).run()
