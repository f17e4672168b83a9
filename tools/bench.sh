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
# The bench sets Host to names like bench-<pid>-<i>, which the daemon really resolves, and it
# probes its Host: so it runs in a network namespace with only loopback, where no query or probe
# can leave. The namespace is made once, here, and entered with nsenter (which execs, so the
# measured PID and start-up are the daemon's, not those of creating a namespace each run).
netns=nob-bench-$$
ip netns add "$netns"
ip -n "$netns" link set lo up
trap 'ip netns del "$netns" 2>/dev/null; rm -rf -- "$state"' EXIT
EXTRA_SERVICES="netobserverd=nsenter --net=/run/netns/$netns $daemon --state-dir $state --host 127.0.0.1" \
    "$work/bench_all.sh" "${RUNS:-5}"

# Idle memory of the daemon alone: RSS and private dirty pages, from smaps_rollup.
eval "$("$work/bus.sh" start)"
nsenter --net=/run/netns/$netns "$daemon" --address "$DBUS_SESSION_BUS_ADDRESS" --state-dir "$state" --host 127.0.0.1 2>/dev/null &
pid=$!
sleep 1
start_rss=$(awk '/^Rss:/ {print $2}' /proc/$pid/smaps_rollup)
# Steady idle: what start-up alone touched has been let go (3 s in) and the probes' own pages are back.
sleep 29
memory=$(awk '/^Rss:/ {r=$2} /^Private_Dirty:/ {d=$2} END {printf "rss_kb=%d private_dirty_kb=%d", r, d}' /proc/$pid/smaps_rollup)
echo "idle netobserverd RSS: ${start_rss} kB 1 s after start, $(echo "$memory" | sed 's/ .*//; s/rss_kb=//') kB 30 s after start"
# Its blocking helper (lookups, census walks, files), a process of its own: counted beside it, never hidden.
echo "idle netobserverd blocking helper, 30 s after start: $(python3 -c "import sys; sys.path.insert(0, '$root/tools'); import procstat; print(procstat.helper_memory($pid))")"
# Status bars and Prometheus: monitor --format waybar latency, the textfile writer's cost.
/usr/bin/python3 "$root/tools/bench_bars.py" "$DBUS_SESSION_BUS_ADDRESS" "$(dirname "$daemon")/netobserver"
# Several targets: 64 of them on one daemon (its netns has only loopback; lo down is the fault).
/usr/bin/python3 "$root/tools/bench_targets64.py" "$DBUS_SESSION_BUS_ADDRESS" "$pid" "$netns"
# 64 targets beside fping: the daemon's CPU for the same probes, added over D-Bus and given as --target, as a ratio.
/usr/bin/python3 "$root/tools/bench_fping.py" "$daemon" 3 2> >(grep -v "fd limit" >&2)
# Hostile callers: random and huge calls, a 30 MiB name, AddTarget churn (issue 9's figures are in make test).
/usr/bin/python3 "$root/tools/bench_hostile.py" "$DBUS_SESSION_BUS_ADDRESS" "$pid" "$netns"
kill $pid; wait $pid 2>/dev/null || true
"$work/bus.sh" stop
# ModemManager and NetworkManager (python3-dbusmock): generation change latency, start-up, idle wake-ups.
/usr/bin/python3 "$root/tools/bench_cellular.py" "$daemon" "$netns" 2> >(grep -v "fd limit" >&2)
# Connectivity (namespaces of its own): portal appearing and sign-in latency, ICMP-filtered start, libcurl's memory.
/usr/bin/python3 "$root/tools/bench_connectivity.py" "$daemon" 2> >(grep -v "fd limit" >&2)
# The loop on a bad network: Peer.Ping while the resolver, the check server, a router or the link misbehave.
/usr/bin/python3 "$root/tools/bench_badnet.py" "$daemon" 12
# Traffic as evidence: blackholes under load, probes per hour, sampling cost by connection count, idle wake-ups.
/usr/bin/python3 "$root/tools/bench_traffic.py" "$daemon" "$(dirname "$daemon")/netobserver-bench" "${TRAFFIC_TRIALS:-10}"
# The GIO module: the service's change → a GLib program and a portal client; the module's RSS and idle wake-ups.
/usr/bin/python3 "$root/tools/bench_gio.py" "$daemon" "$netns" "$root/.build/gio" "$root/Tests/NamespaceTests/helpers" 20 \
    2> >(grep -vE "fd limit|ctivat|max threads" >&2)
echo "idle netobserverd: $memory"
python3 "$root/tools/bench_targets.py" "$memory" "$work"/results/raw-*.txt
