// netobserver-bench: measurements that need root and network namespaces
// (`make bench` runs it). Traffic stays inside namespaces it creates and removes.
import Glibc

// `netobserver-bench simulate N`: the cores in virtual time; needs neither root nor a network.
if CommandLine.arguments.count > 2, CommandLine.arguments[1] == "simulate" {
    exit(SimulationBench(scenarios: Int(CommandLine.arguments[2]) ?? 1000).run() ? 0 : 1)
}

guard geteuid() == 0 else {
    print("netobserver-bench: needs root (network namespaces); skipped")
    exit(0)
}

try ReachabilityBench().run()
try ProbeBench().run()
// The daemon under test: the path given, else netobserverd beside this program.
let daemon = CommandLine.arguments.count > 1 ? CommandLine.arguments[1]
    : String(CommandLine.arguments[0].prefix(upTo: CommandLine.arguments[0].lastIndex(of: "/") ?? CommandLine.arguments[0].startIndex)) + "/netobserverd"
try MonitorBench(daemonPath: daemon).run()
