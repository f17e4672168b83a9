#!/usr/bin/env bash
# Runs netobserverd in the foreground. With DBUS_SESSION_BUS_ADDRESS set it uses that
# session bus; otherwise it starts a private dbus-daemon, and stops it (by PID) on exit.
set -euo pipefail
daemon=$1; shift
client=$(dirname "$daemon")/netobserver

try_these() {
    local bus=$1
    cat <<TXT
netobserverd is starting. In another terminal, try:
  $bus busctl --user introspect org.netobserver.Monitor /org/netobserver/Monitor
  $bus busctl --user get-property org.netobserver.Monitor /org/netobserver/Monitor org.netobserver.Monitor Status Reason
  $bus busctl --user set-property org.netobserver.Monitor /org/netobserver/Monitor org.netobserver.Monitor Host s example.org
  $bus gdbus monitor --session --dest org.netobserver.Monitor
  $bus gdbus call --session -d org.netobserver.Monitor -o /org/netobserver/Monitor -m org.netobserver.Monitor.Wait 5000
  $bus $client status        (also: monitor, check, wait, set host NAME, --json)
Stop with Ctrl-C.
TXT
}

if [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
    try_these ""
    exec "$daemon" --session "$@"
fi

dir=$(mktemp -d /tmp/netobserver-run.XXXXXX)
dbus-daemon --session --nofork --nopidfile --address="unix:path=$dir/bus" --print-address=1 \
    </dev/null >"$dir/address" 2>"$dir/bus.log" &
bus_pid=$!
daemon_pid=""
cleanup() {
    [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null || true
    [ -n "$daemon_pid" ] && wait "$daemon_pid" 2>/dev/null || true
    kill -TERM "$bus_pid" 2>/dev/null || true
    wait "$bus_pid" 2>/dev/null || true
    rm -rf -- "$dir"
}
trap cleanup EXIT
trap 'exit 0' INT TERM
for _ in $(seq 1 200); do [ -s "$dir/address" ] && break; sleep 0.01; done
address=$(head -n1 "$dir/address")
[ -n "$address" ] || { echo "run.sh: dbus-daemon did not start:" >&2; cat "$dir/bus.log" >&2; exit 1; }
echo "private session bus: $address"
try_these "DBUS_SESSION_BUS_ADDRESS='$address'"
"$daemon" --address "$address" --state-dir "$dir/state" "$@" &
daemon_pid=$!
wait "$daemon_pid"
