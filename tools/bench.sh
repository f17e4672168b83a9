#!/usr/bin/env bash
# make bench: netobserverd against the C libdbus, C sd-bus and Python reference services of
# ../shared/bench, interleaved in one run (medians of RUNS runs), on private buses only.
#   tools/bench.sh PATH/TO/netobserverd         RUNS=5 by default
set -euo pipefail
daemon=$1
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED_BENCH:-$root/../shared/bench}
[ -d "$shared" ] || { echo "bench: no reference harness at $shared" >&2; exit 1; }
work=$root/.build/refbench
rm -rf "$work"
cp -r "$shared" "$work"
chmod -R u+w "$work"
make -s -C "$work" >&2
state=$(mktemp -d /tmp/netobserver-bench.XXXXXX)
trap 'rm -rf -- "$state"' EXIT
# The bench sets Host to names like bench-<pid>-<i>, which the daemon really resolves, and it
# probes its Host: so it runs in a network namespace of its own with only loopback, where no
# query or probe can leave. unshare and sh exec, so the measured PID is the daemon's.
if [ "$(id -u)" = 0 ]; then isolate="unshare --net"; else isolate="unshare --net --map-root-user"; fi
EXTRA_SERVICES="netobserverd=$isolate sh -c 'ip link set lo up && exec $daemon --state-dir $state --host 127.0.0.1'" \
    "$work/bench_all.sh" "${RUNS:-5}"
