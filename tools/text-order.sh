#!/usr/bin/env bash
# make text-order: the functions netobserverd runs while it idles, in Sources/netobserverd/steady-text.order.
#
# The release link places them first (lld --symbol-ordering-file), so the code of an idle daemon sits in a
# few contiguous pages. The kernel maps 64 KiB around every page fault in a file mapping; with that code
# scattered through the static Swift runtime and our modules, one probe cycle kept ~3.5 MB of text
# resident. Stale names cost nothing (the linker skips them); regenerate after large changes.
#   tools/text-order.sh PATH/TO/release/netobserverd
# Under callgrind, on a private bus, in a network namespace with only loopback, probing 127.0.0.1: the
# counts are cleared after start-up, so only what the steady state runs (probes, verdicts, history
# writes, traffic samples, the end-of-turn work) is listed, most-run first; then what answering clients
# adds (Get, GetAll, Set and the signals it sends, a script's or a status bar's calls), most-run first.
set -euo pipefail
daemon=$1
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/Sources/netobserverd/steady-text.order
warm=${WARM:-10}
steady=${STEADY:-40}

command -v valgrind >/dev/null || {
    echo "text-order: installing valgrind"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >/dev/null
}

work=$(mktemp -d /tmp/netobserver-order.XXXXXX)
netns=nob-order-$$
bus_pid="" daemon_pid=""
cleanup() {
    [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null || true
    [ -n "$bus_pid" ] && kill -TERM "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null || true
    ip netns del "$netns" 2>/dev/null || true
    rm -rf -- "$work"
}
trap cleanup EXIT

# Valgrind cannot read the Swift DWARF; the symbol table is all this needs.
strip -g -o "$work/netobserverd" "$daemon"
ip netns add "$netns"
ip -n "$netns" link set lo up
dbus-daemon --session --nofork --nopidfile --address="unix:path=$work/bus" --print-address=1 \
    </dev/null >"$work/address" 2>/dev/null &
bus_pid=$!
for _ in $(seq 50); do [ -s "$work/address" ] && break; sleep 0.1; done
mkdir "$work/state"
nsenter --net="/run/netns/$netns" valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/profile" \
    "$work/netobserverd" --address "unix:path=$work/bus" --state-dir "$work/state" --host 127.0.0.1 \
    2>"$work/valgrind.log" &
daemon_pid=$!
sleep "$warm"
callgrind_control -z "$daemon_pid" >/dev/null 2>&1
sleep "$steady"
callgrind_control -d "$daemon_pid" >/dev/null 2>&1
for i in $(seq "${CALLS:-300}"); do
    for call in "Get ss org.netobserver.Monitor Status" "GetAll s org.netobserver.Monitor" \
                "Set ssv org.netobserver.Monitor Interval u $((1000 + i % 2))"; do
        # shellcheck disable=SC2086
        busctl --address="unix:path=$work/bus" call org.netobserver.Monitor /org/netobserver/Monitor \
            org.freedesktop.DBus.Properties $call >/dev/null
    done
done
kill -TERM "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""

# Every function of the binary with instructions counted since the reset, most-run first.
python3 - "$work/profile.1" "$work/profile" >"$out" <<'PY'
import re, sys

def costs(profile):
    """Each function of the binary with the instructions it ran itself in this part of the profile."""
    names, objects, costs = {}, {}, {}
    current = ob = None
    calls = False
    with open(profile) as f:
        for line in f:
            line = line.rstrip('\n')
            m = re.match(r'^(c?)(fn|ob)=\((\d+)\)(?: (.*))?$', line)
            if m:
                called, kind, number, name = m.groups()
                table = names if kind == 'fn' else objects
                if name:
                    table[number] = name
                if not called and kind == 'ob':
                    ob = objects.get(number)
                if not called and kind == 'fn':
                    current = names.get(number) if ob and ob.endswith('/netobserverd') else None
                continue
            if line.startswith('calls='):
                calls = True
                continue
            if current and line and (line[0].isdigit() or line[0] in '+-*'):
                if calls:
                    calls = False  # the cost line after calls= is the callee's, inclusive
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    costs[current] = costs.get(current, 0) + int(parts[1])
    return costs

listed = set()
for profile in sys.argv[1:]:
    for name, _ in sorted(costs(profile).items(), key=lambda item: -item[1]):
        if name not in listed:
            listed.add(name)
            print(name)
PY
# The linker moves input sections, not functions. Public functions have a section each, but an object's
# private functions share its one .text (1.6 MB for the static Swift runtime's Swift.o): such a name, listed
# early, would pull that whole section in front of the rest. So the functions with a section of their own
# come first, most-run first, and the others after them.
objects=$(dirname "$daemon")
static=$(dirname "$(readlink -f "$(command -v swift)")")/../lib/swift_static/linux
readelf -SW "$objects"/*.build/*.o "$static"/*.a 2>/dev/null | grep -o ' \.text\.[^ ]*' | sed 's/^ \.text\.//' | sort -u >"$work/own"
awk 'NR == FNR { own[$0] = 1; next } ($0 in own) { print; next } { rest[++n] = $0 } END { for (i = 1; i <= n; i++) print rest[i] }' \
    "$work/own" "$out" >"$work/order"
cp "$work/order" "$out"
echo "text-order: $(wc -l <"$out") functions in ${out#$root/}, $(grep -cxFf "$work/own" "$out") in sections of their own first"
