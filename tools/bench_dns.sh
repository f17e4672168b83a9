#!/usr/bin/env bash
# make bench: INTERFACE.md "DNS truth"'s figures, against real resolvers in namespaces of the bench's own.
#   tools/bench_dns.sh NETOBSERVERD NETOBSERVER SYSTEMD-RESOLVED     (root; RUNS=20 by default)
# 1. systemd-resolved 252 with DNS-over-TLS to unbound, Host in its cache, port 853 then dropped: seconds from
#    the first fresh lookup after the drop to Dns `failing`.
# 2. A resolver answering every NXDOMAIN with an address: seconds from the network change to `intercepted`.
# 3. Opportunistic DNS-over-TLS on a network refusing 853: lookups until `unencrypted`.
# 4. DNS packets from the client to anything but its configured resolvers, over the whole run.
set -euo pipefail
daemon=$1
client=$2
resolved=$3
runs=${RUNS:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/netobserver-dnsbench.XXXXXX)
chmod 755 "$work"
c=nob-dnsc-$$
r=nob-dnsr-$$
pids=()
resolved_pid=""
daemon_pid=""
cleanup() {
    for pid in "${pids[@]}" $resolved_pid $daemon_pid; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ip netns del "$c" 2>/dev/null || true
    ip netns del "$r" 2>/dev/null || true
    rm -rf "/etc/netns/$c" "$work"
}
trap cleanup EXIT

ip netns add "$c"
ip netns add "$r"
ip link add nobdc0 netns "$c" type veth peer name nobdr0 netns "$r"
for ns in "$c" "$r"; do ip -n "$ns" link set lo up; done
ip -n "$c" link set nobdc0 up
ip -n "$r" link set nobdr0 up
ip -n "$c" addr add 198.18.0.2/24 dev nobdc0
# .1 unbound and the first next hop, .3 dnsmasq, .100 on: a next hop per run of the interception figure; 198.18.2.2,
# the router's own, is that figure's Host, off the link (so the route to it has a next hop).
for a in 198.18.0.1 198.18.0.3 $(seq -f "198.18.0.%g" 100 $((100 + runs))); do ip -n "$r" addr add "$a/24" dev nobdr0; done
ip -n "$r" addr add 198.18.2.2/32 dev lo
ip -n "$c" route add default via 198.18.0.1
ip netns exec "$c" nft -f - <<EOF
table inet dnsbench {
  chain out {
    type filter hook output priority 0;
    ip daddr != { 127.0.0.53, 198.18.0.1, 198.18.0.3 } udp dport { 53, 853 } counter
    ip daddr != { 127.0.0.53, 198.18.0.1, 198.18.0.3 } tcp dport { 53, 853 } counter
    meta nfproto ipv6 udp dport { 53, 853 } counter
    meta nfproto ipv6 tcp dport { 53, 853 } counter
  }
}
EOF
mkdir -p "/etc/netns/$c"

# unbound on the router: plain DNS and DNS-over-TLS with a test CA's certificate.
sh "$root/Tests/HTTPCheckTests/make_test_ca.sh" "$work/ca" "IP:198.18.0.1,DNS:dot.test"
cat > "$work/unbound.conf" <<EOF
server:
  interface: 198.18.0.1@53
  interface: 198.18.0.1@853
  tls-port: 853
  tls-service-key: "$work/ca/server.key"
  tls-service-pem: "$work/ca/server.pem"
  access-control: 198.18.0.0/15 allow
  username: ""
  chroot: ""
  directory: "$work"
  pidfile: ""
  use-syslog: no
  logfile: ""
  verbosity: 0
  do-ip6: no
  module-config: "iterator"
  local-zone: "test." static
  local-data: "web.test. 3600 IN A 198.18.0.1"
  local-zone: "invalid." static
EOF
ip netns exec "$r" unbound -d -c "$work/unbound.conf" 2>"$work/unbound.log" &
pids+=($!)

# resolved's user, laid over /etc/passwd in its mount namespaces only; its bus, which stands for the system bus.
uid=64990
while getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null; do uid=$((uid - 1)); done
{ cat /etc/passwd; echo "systemd-resolve:x:$uid:$uid:resolved:/:/usr/sbin/nologin"; } > "$work/passwd"
{ cat /etc/group; echo "systemd-resolve:x:$uid:"; } > "$work/group"
mkdir -p "$work/etc"
cat > "$work/bus.conf" <<EOF
<busconfig>
  <type>system</type>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
EOF
overlay="mount --bind $work/passwd /etc/passwd && mount --bind $work/group /etc/group"
ip netns exec "$c" unshare -m sh -c "$overlay && exec dbus-daemon --nofork --nopidfile --nosyslog --config-file=$work/bus.conf" \
    2>/dev/null &
pids+=($!)
for _ in $(seq 300); do [ -S "$work/bus" ] && break; sleep 0.01; done
system_bus="unix:path=$work/bus"
start_resolved() {
    [ -n "$resolved_pid" ] && { kill "$resolved_pid" 2>/dev/null || true; wait "$resolved_pid" 2>/dev/null || true; }
    printf '[Resolve]\nLLMNR=no\nMulticastDNS=no\nDNSSEC=no\n%b\n' "$1" > "$work/etc/resolved.conf"
    ip netns exec "$c" unshare -m sh -c "mount -t tmpfs tmpfs /run/systemd && mount --bind $work/etc /etc/systemd && \
        $overlay && mount --bind $work/ca/ca.pem /etc/ssl/certs/ca-certificates.crt && mkdir -p /run/systemd/resolve && \
        chown $uid:$uid /run/systemd/resolve && SYSTEMD_LOG_LEVEL=debug DBUS_SYSTEM_BUS_ADDRESS=$system_bus exec $resolved" \
        2>>"$work/resolved.log" &
    resolved_pid=$!
    for _ in $(seq 500); do
        busctl --address="$system_bus" call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
            GetNameOwner s org.freedesktop.resolve1 >/dev/null 2>&1 && return
        sleep 0.01
    done
    echo "bench: systemd-resolved did not start: $(tail -3 "$work/resolved.log")" >&2
    exit 1
}

eval "$(dbus-daemon --session --print-address=1 --print-pid=1 --fork | { read -r a; read -r p; echo "bus=$a; bus_pid=$p"; })"
pids+=("$bus_pid")
start_daemon() {
    [ -n "$daemon_pid" ] && { kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; }
    rm -rf "$work/state"
    DBUS_SYSTEM_BUS_ADDRESS=$system_bus ip netns exec "$c" "$daemon" --address "$bus" --state-dir "$work/state" \
        --interval 200 --timeout 200 "$@" 2>>"$work/daemon.log" &
    daemon_pid=$!
    for _ in $(seq 500); do get Connectivity 2>/dev/null | grep -q full && return; sleep 0.01; done
    echo "bench: the daemon never read full: $(tail -3 "$work/daemon.log")" >&2
    exit 1
}
get() {
    busctl --address="$bus" get-property org.netobserver.Monitor /org/netobserver/Monitor org.netobserver.Monitor "$1" |
        sed 's/^[a-z]* //; s/"//g'
}
now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# Polls property $1 until it reads one of the words in $2 (within $3 s): the seconds it took, or "never".
until_reads() {
    local start
    start=$(now)
    while awk -v a="$(minus "$(now)" "$start")" -v limit="$3" 'BEGIN { exit !(a < limit) }'; do
        if [[ " $2 " == *" $(get "$1") "* ]]; then minus "$(now)" "$start"; return; fi
        sleep 0.05
    done
    echo never
}
summary() { # name, unit, values...
    local name=$1 unit=$2
    shift 2
    printf '%s\n' "$@" | { grep -v never || true; } | sort -g | awk -v name="$name" -v unit="$unit" -v runs="$#" '
        { v[++n] = $1 } END {
            if (n == 0) { printf "%s: never, in %d runs\n", name, runs; exit }
            printf "%s: %d of %d runs; median %.2f %s, max %.2f %s\n", name, n, runs, v[int((n + 1) / 2)], unit, v[n], unit }'
}

# 1. DNS-over-TLS to a server whose 853 is dropped.
echo "nameserver 127.0.0.53" > "/etc/netns/$c/resolv.conf"
start_resolved "DNS=198.18.0.1#dot.test\nDNSOverTLS=yes"
start_daemon --host web.test
failing=()
for i in $(seq "$runs"); do
    [ "$(until_reads Dns "ok slow" 30)" = never ] && { echo "bench: run $i: Dns never ok" >&2; }
    busctl --address="$system_bus" call org.freedesktop.resolve1 /org/freedesktop/resolve1 \
        org.freedesktop.resolve1.Manager ResolveHostname isit 0 web.test 2 0 >/dev/null
    ip netns exec "$r" iptables -I INPUT -p tcp --dport 853 -j DROP
    # The first fresh lookup after the drop: a changed probe zone asks at once, as a route change or resume does.
    "$client" --address "$bus" set dns-probe-zone "run$i.test" >/dev/null
    failing+=("$(until_reads Dns failing 30)")
    ip netns exec "$r" iptables -D INPUT -p tcp --dport 853 -j DROP
    until_reads Connectivity full 40 >/dev/null
done
summary "DoT with port 853 dropped, Host cached: Dns failing after the first fresh lookup (goal 20 of 20 within 15 s)" s \
    "${failing[@]}"

# 3. Opportunistic DNS-over-TLS falling back on a network that refuses 853.
lookups=()
for i in $(seq 5); do
    ip netns exec "$r" iptables -D INPUT -p tcp --dport 853 -j REJECT --reject-with tcp-reset 2>/dev/null || true
    start_resolved "DNS=198.18.0.1\nDNSOverTLS=opportunistic"
    "$client" --address "$bus" set dns-probe-zone "tls$i.test" >/dev/null
    until_reads DnsTransport tls 10 >/dev/null
    ip netns exec "$r" iptables -I INPUT -p tcp --dport 853 -j REJECT --reject-with tcp-reset
    start_resolved "DNS=198.18.0.1\nDNSOverTLS=opportunistic"
    before=$(grep -c "Looking up RR for web.test IN A" "$work/resolved.log" || true)
    "$client" --address "$bus" set dns-probe-zone "plain$i.test" >/dev/null
    if [ "$(until_reads Dns unencrypted 10)" = never ]; then
        lookups+=(never)
    else
        lookups+=($(($(grep -c "Looking up RR for web.test IN A" "$work/resolved.log" || true) - before)))
    fi
done
ip netns exec "$r" iptables -D INPUT -p tcp --dport 853 -j REJECT --reject-with tcp-reset 2>/dev/null || true
summary "opportunistic DoT falling back: fresh lookups until Dns unencrypted (goal 1)" lookups "${lookups[@]}"
kill "$resolved_pid" 2>/dev/null || true

# 2. A resolver answering every NXDOMAIN with an address; a network change is the route's next hop changing.
kill "$daemon_pid" 2>/dev/null || true
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""
echo "nameserver 198.18.0.3" > "/etc/netns/$c/resolv.conf"
ip netns exec "$r" dnsmasq --keep-in-foreground --user=root --conf-file=/dev/null --no-hosts --no-resolv \
    --listen-address=198.18.0.3 --bind-interfaces --pid-file= --address=/#/198.18.0.99 2>/dev/null &
pids+=($!)
sleep 0.3
start_daemon --host 198.18.2.2
# Dns as the service announces it, with the wall-clock time each change was heard.
/usr/bin/python3 - "$bus" > "$work/dns-watch.log" <<'WATCH' &
import sys, time
import dbus, dbus.mainloop.glib
from gi.repository import GLib
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
def changed(interface, values, invalidated):
    if "Dns" in values:
        print("%.6f %s" % (time.time(), values["Dns"]), flush=True)
bus.add_signal_receiver(changed, "PropertiesChanged", "org.freedesktop.DBus.Properties", path="/org/netobserver/Monitor")
GLib.MainLoop().run()
WATCH
pids+=($!)
sleep 1
intercepted=()
for i in $(seq "$runs"); do
    # Another network each run: a next hop not seen before, so the question is asked, never taken from the book.
    start=$(now)
    ip -n "$c" route replace default via "198.18.0.$((100 + i))"
    took=never
    for _ in $(seq 100); do
        at=$(awk -v s="$start" '$1 > s && $2 == "intercepted" {print $1; exit}' "$work/dns-watch.log")
        [ -n "$at" ] && { took=$(minus "$at" "$start"); break; }
        sleep 0.05
    done
    intercepted+=("$took")
done
summary "every NXDOMAIN rewritten: Dns intercepted after the network change (goal 20 of 20 within 1 s)" s \
    "${intercepted[@]}"

counts=$(ip netns exec "$c" nft list table inet dnsbench | grep -o "packets [0-9]*" | awk '{s += $2} END {print s + 0}')
echo "DNS packets from the client to anything but its configured resolvers, whole run: $counts (goal 0)"
