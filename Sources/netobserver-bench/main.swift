// netobserver-bench: measurements that need root and network namespaces
// (`make bench` runs it). Traffic stays inside namespaces it creates and removes.
import Glibc

guard geteuid() == 0 else {
    print("netobserver-bench: needs root (network namespaces); skipped")
    exit(0)
}

try ReachabilityBench().run()
try ProbeBench().run()
