#!/usr/bin/env bash
# The systemd lane: systemd 252 boots as PID 1 in namespaces of its own (pid, mount, net, uts, ipc,
# cgroup) over a throwaway overlay of this machine's root, with the files `make install DESTDIR=`
# puts in place on top (run.sh [--staged DIR]), or a package installed into that root by apt
# (run.sh --deb FILE). It checks what
# INTERFACE.md's "Installed as a distribution ships it" lists, prints one line per check
# ("ok NAME: figure" or "FAIL NAME: why") and a last line "lane: N passed, N failed", powers the
# system off and leaves no mount, cgroup, namespace or file behind. Needs root; exit status 0 when
# every check passed, 77 when this machine cannot run the lane (the reason on stderr).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tools/systemd-lane

deb="" staged=""
case "${1:-}" in
    --deb) deb=$(realpath "$2") ;;
    # A tree `make install DESTDIR=… PREFIX=/usr` made already: under `swift test`, which holds the
    # build directory's lock, the lane must not build.
    --staged) staged=$(realpath "$2") ;;
esac

skip() { echo "systemd lane skipped: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (namespaces, a cgroup, a mount of its own)"
[ -x /lib/systemd/systemd ] || skip "no systemd installed"
cgroups=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
[ -n "$cgroups" ] || skip "no cgroup2 hierarchy mounted"
unshare --pid --fork --mount --net --uts --ipc --cgroup true 2>/dev/null || skip "cannot make namespaces"

passed=0 failed=0
ok() { echo "ok $1: $2"; passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# check NAME DETAIL CONDITION: CONDITION is shell text, evaluated after DETAIL was.
check() { if eval "$3" >/dev/null 2>&1; then ok "$1" "$2"; else bad "$1" "$2"; fi; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# An earlier lane killed before its own clean-up: its empty cgroups go (a live one's rmdir fails).
find "$cgroups" -maxdepth 1 -name 'netobserver-lane.*' -exec sh -c 'find "$1" -depth -type d -exec rmdir {} + 2>/dev/null' _ {} \; || true
lane=$(mktemp -d /tmp/netobserver-lane.XXXXXX)
cgroup="$cgroups/netobserver-lane.${lane##*.}"
server=no-lane-${lane##*.}
launcher=""
pid1=""
cleanup() {
    if [ -n "$pid1" ] && kill -0 "$pid1" 2>/dev/null; then kill -9 "$pid1" 2>/dev/null || true; fi
    [ -z "$launcher" ] || wait "$launcher" 2>/dev/null || true
    ip netns del "$server" 2>/dev/null || true
    # systemd's own cgroups stay behind once their processes are gone: the deepest first.
    [ ! -d "$cgroup" ] || find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true
    rm -rf -- "$lane"
}
trap cleanup EXIT

# The files laid over the host's root: the installed service, the lane's target and drop-ins, and
# masks for the units that would change the host's kernel (sysctl, modules, binfmt, udev, clock, seed).
stage=$lane/stage
if [ -n "$staged" ]; then
    mkdir -p "$stage"
    cp -a "$staged/." "$stage/"
elif [ -z "$deb" ]; then
    make -s install DESTDIR="$stage" PREFIX=/usr >/dev/null
else
    mkdir -p "$stage/root"
    cp "$deb" "$stage/root/"
fi
units=$stage/etc/systemd/system
mkdir -p "$units/netobserver.service.d" "$lane/mnt"
cp "$here/etc/netobserver-lane.target" "$here/etc/lane-needs-internet.service" "$units/"
cp "$here/etc/netobserver-lane.conf" "$units/netobserver.service.d/lane.conf"
for unit in systemd-sysctl.service systemd-modules-load.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
            systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-udev-trigger.service \
            systemd-udev-settle.service systemd-hwdb-update.service systemd-timesyncd.service systemd-random-seed.service \
            systemd-remount-fs.service systemd-pstore.service getty@tty1.service serial-getty@.service console-getty.service \
            sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount sys-fs-fuse-connections.mount \
            dev-hugepages.mount; do
    ln -sf /dev/null "$units/$unit"
done
[ -n "$deb" ] || systemctl --root="$stage" enable netobserver.service netobserver-wait-online.service >/dev/null 2>&1
: >"$lane/console.log"

# The launcher gets a cgroup of its own, which the cgroup namespace makes systemd's root.
mkdir "$cgroup"
started=$(date +%s%N)
( echo "$BASHPID" >"$cgroup/cgroup.procs"
  exec unshare --pid --fork --mount --net --uts --ipc --cgroup "$here/enter.sh" "$lane" ) >"$lane/enter.log" 2>&1 &
launcher=$!
for _ in $(seq 100); do pid1=$(pgrep -P "$launcher" || true); [ -n "$pid1" ] && break; sleep 0.02; done
[ -n "$pid1" ] || { cat "$lane/enter.log" >&2; echo "the lane's first process never started" >&2; exit 1; }

# The lane's network: one link to a server namespace whose address is the service's Host.
ip netns add "$server"
ip link add nl-lane type veth peer name nl-server netns "$server"
ip link set nl-lane netns "$pid1"
ip -n "$server" addr add 198.18.7.1/24 dev nl-server
ip -n "$server" link set nl-server up
ip -n "$server" link set lo up
nsenter -t "$pid1" -n sh -c 'ip link set lo up && ip addr add 198.18.7.2/24 dev nl-lane && ip link set nl-lane up &&
                             ip route add default via 198.18.7.1'
touch "$lane/go"

in_lane() { nsenter -t "$pid1" -a "$@"; }
as_user() { in_lane setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
prop() { in_lane systemctl show -P "$2" "$1"; }
monitor() { "${@:2}" busctl --system get-property org.netobserver.Monitor /org/netobserver/Monitor org.netobserver.Monitor "$1"; }
wait_until() { # seconds, then shell text that succeeds when the wait is over
    local deadline=$(( $(date +%s%N) + $1 * 1000000000 )); shift
    until eval "$@" >/dev/null 2>&1; do [ "$(date +%s%N)" -lt "$deadline" ] || return 1; sleep 0.05; done
}

# systemd is PID 1 once the first process has executed it and its private socket answers.
wait_until 10 '[ "$(cat /proc/$pid1/comm)" = systemd ] && in_lane systemctl show -P Version' || true
state=$(in_lane systemctl is-system-running --wait 2>/dev/null || true)
boot_ms=$(ms_since "$started")
userspace=$(in_lane systemctl show -P UserspaceTimestampMonotonic)
finished=$(in_lane systemctl show -P FinishTimestampMonotonic)
service_active=$(prop netobserver.service ActiveEnterTimestampMonotonic)
check boot "state $state, booted in $(( (finished - userspace) / 1000 )) ms after systemd started ($boot_ms ms from launch)" \
    '[ "$state" = running ]'
if [ -n "$deb" ]; then
    # The package goes in as on a fresh Debian system: apt installs it, its scripts create the user and start the service.
    # A container image's policy-rc.d (exit 101: start nothing) is no part of a Debian system.
    in_lane rm -f /usr/sbin/policy-rc.d
    apt_ms=$(date +%s%N)
    if in_lane env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "/root/$(basename "$deb")" >"$lane/apt.log" 2>&1; then
        ok package-installed "apt-get install in $(ms_since "$apt_ms") ms"
    else
        bad package-installed "apt-get install failed: $(tail -3 "$lane/apt.log" | tr '\n' ' ')"
    fi
    service_active=$(prop netobserver.service ActiveEnterTimestampMonotonic)
    check service-active "active $(( (service_active - userspace) / 1000 )) ms after systemd started, started by the package" \
        '[ "$(in_lane systemctl is-active netobserver.service)" = active ]'
    # GLib's trigger refreshed the module cache: GLib programs load the module by it.
    modules=$(pkg-config --variable=giomoduledir gio-2.0)
    cached=$(in_lane grep -c "^libgionetobserver.so: gio-network-monitor" "$modules/giomodule.cache" || true)
    check gio-module-cached "giomodule.cache lists the module $cached time(s)" '[ "$cached" = 1 ]'
    enabled="netobserver.service $(in_lane systemctl is-enabled netobserver.service 2>&1 || true), wait-online $(in_lane systemctl is-enabled netobserver-wait-online.service 2>&1 || true)"
    check package-enables "$enabled" '[ "$enabled" = "netobserver.service enabled, wait-online disabled" ]'
    # What an administrator does to make network-online.target wait for the verdict.
    in_lane systemctl enable --now netobserver-wait-online.service >/dev/null 2>&1 || true
else
check service-active "active $(( (service_active - userspace) / 1000 )) ms after systemd started" \
    '[ "$(in_lane systemctl is-active netobserver.service)" = active ]'
fi
failed_units=$(in_lane systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')
check no-failed-unit "${failed_units:-none failed}" '[ -z "$failed_units" ]'

main=$(prop netobserver.service MainPID)
helper=$(in_lane pgrep -P "$main" | head -1 || true)
status_of() { in_lane cat "/proc/$1/status" 2>/dev/null || true; }
field() { awk -v k="$2:" '$1 == k {print $2}' <<<"$1"; }
daemon_status=$(status_of "$main")
helper_status=$(status_of "$helper")
uid=$(in_lane id -u netobserver 2>/dev/null || echo none)
check user "netobserver is uid $uid; daemon runs as uid $(field "$daemon_status" Uid), helper as $(field "$helper_status" Uid)" \
    '[ "$uid" != none ] && [ "$(field "$daemon_status" Uid)" = "$uid" ] && [ "$(field "$helper_status" Uid)" = "$uid" ]'
netdev=$(in_lane getent group netdev | cut -d: -f3)
check netdev-group "gid ${netdev:-none}" '[ -n "$netdev" ]'
caps_ok() { # status, expected effective/permitted/bounding set
    [ "$(field "$1" CapEff)" = "$2" ] && [ "$(field "$1" CapPrm)" = "$2" ] && [ "$(field "$1" CapBnd)" = "$2" ] &&
        [ "$(field "$1" NoNewPrivs)" = 1 ] && [ "$(field "$1" Seccomp)" = 2 ]
}
describe() { echo "CapEff $(field "$1" CapEff) CapPrm $(field "$1" CapPrm) CapBnd $(field "$1" CapBnd) NoNewPrivs $(field "$1" NoNewPrivs) Seccomp $(field "$1" Seccomp)"; }
check daemon-privileges "$(describe "$daemon_status")" 'caps_ok "$daemon_status" 0000000000002000'
# The helper holds nothing: no capability effective, permitted, inheritable or ambient. Its bounding
# set is the unit's (CAP_NET_RAW): dropping it takes CAP_SETPCAP, and with NoNewPrivs no exec regains it.
helper_ok() {
    for set in CapEff CapPrm CapInh CapAmb; do [ "$(field "$helper_status" $set)" = 0000000000000000 ] || return 1; done
    [ "$(field "$helper_status" NoNewPrivs)" = 1 ] && [ "$(field "$helper_status" Seccomp)" = 2 ]
}
check helper-privileges "CapEff $(field "$helper_status" CapEff) CapPrm $(field "$helper_status" CapPrm) CapInh $(field "$helper_status" CapInh) CapAmb $(field "$helper_status" CapAmb) NoNewPrivs $(field "$helper_status" NoNewPrivs) Seccomp $(field "$helper_status" Seccomp)" helper_ok
exposure=$(in_lane systemd-analyze security netobserver.service --no-pager 2>/dev/null | sed -n 's/.*Overall exposure level for netobserver.service: \([0-9.]*\).*/\1/p')
check exposure "systemd-analyze security: ${exposure:-none}" 'awk -v e="${exposure:-99}" "BEGIN { exit !(e <= 2.0) }"'
fds() { in_lane ls "/proc/$1/fd" | wc -l; }
ok footprint "daemon RSS $(field "$daemon_status" VmRSS) kB, $(field "$daemon_status" Threads) thread(s), $(fds "$main") descriptors; helper RSS $(field "$helper_status" VmRSS) kB, $(field "$helper_status" Threads) thread(s)"

# Access as the shipped policy gives it.
reachable=$(monitor Connectivity as_user 2>&1 || true)
check get-as-user "Connectivity as uid 65534: $reachable" 'grep -q "^s \"" <<<"$reachable"'
denied=$(as_user busctl --system set-property org.netobserver.Monitor /org/netobserver/Monitor org.netobserver.Monitor Interval u 200 2>&1 || true)
check set-denied-to-user "${denied:-Set succeeded}" 'grep -qi "access denied" <<<"$denied"'
allowed=$(in_lane setpriv --reuid=65534 --regid=65534 --groups="${netdev:-0}" busctl --system set-property \
    org.netobserver.Monitor /org/netobserver/Monitor org.netobserver.Monitor Interval u 200 2>&1 && echo allowed || true)
check set-allowed-to-netdev "${allowed:-refused}" '[ "$allowed" = allowed ]'

# network-online.target: wait-online done within 1 s of the service, and left alone by its restarts.
wait_until 5 '[ "$(prop netobserver-wait-online.service ActiveState)" = active ]' || true
online=$(prop netobserver-wait-online.service ActiveEnterTimestampMonotonic)
# From the later of the service becoming active and wait-online starting (an administrator
# enables it after the package's install).
since=$(prop netobserver.service ActiveEnterTimestampMonotonic)
wait_started=$(prop netobserver-wait-online.service InactiveExitTimestampMonotonic)
[ "$wait_started" -le "$since" ] || since=$wait_started
check wait-online "finished $(( (online - since) / 1000 )) ms after the service was active and it had started" \
    '[ "$online" -gt 0 ] && [ $(( online - since )) -le 1000000 ]'
invocation=$(prop netobserver-wait-online.service InvocationID)
in_lane systemctl restart netobserver.service
in_lane systemctl stop netobserver.service
check restart-leaves-wait-online "wait-online $(prop netobserver-wait-online.service ActiveState), same run: $([ "$(prop netobserver-wait-online.service InvocationID)" = "$invocation" ] && echo yes || echo no); network-online.target $(prop network-online.target ActiveState)" \
    '[ "$(prop netobserver-wait-online.service InvocationID)" = "$invocation" ] && [ "$(prop network-online.target ActiveState)" = active ] &&
    [ "$(prop netobserver-wait-online.service ActiveState)" = active ]'

# Bus activation: the service is stopped; an ordinary user's Get starts it.
asked=$(date +%s%N)
answer=$(monitor Status as_user 2>&1 || true)
activation_ms=$(ms_since "$asked")
check bus-activation "a Get answered $activation_ms ms after the call ($answer), unit $(in_lane systemctl is-active netobserver.service)" \
    '[ "$activation_ms" -le 1000 ] && grep -q "^s \"" <<<"$answer" && [ "$(in_lane systemctl is-active netobserver.service)" = active ]'

# The watchdog: a frozen daemon is killed and started again within WatchdogSec + 5 s.
wait_until 5 '[ "$(monitor Connectivity in_lane)" = "s \"full\"" ]' || true
frozen=$(prop netobserver.service MainPID)
watchdog=$(prop netobserver.service WatchdogUSec)   # as systemd prints a time span: "2s"
watchdog_s=${watchdog%s}
in_lane kill -STOP "$frozen"
stopped=$(date +%s%N)
restarted() { local now; now=$(prop netobserver.service MainPID); [ "$now" != 0 ] && [ "$now" != "$frozen" ] && [ "$(in_lane systemctl is-active netobserver.service)" = active ]; }
wait_until $(( watchdog_s + 10 )) restarted || true
watchdog_ms=$(ms_since "$stopped")
journal=$(in_lane journalctl -u netobserver.service --no-pager -o cat 2>/dev/null || true)
check watchdog "restarted $watchdog_ms ms after SIGSTOP (WatchdogSec=$watchdog_s)" \
    'restarted && [ "$watchdog_ms" -le $(( (watchdog_s + 5) * 1000 )) ] && grep -q "Failed with result .watchdog." <<<"$journal"'

# Online, a job under ExecCondition runs.
wait_until 5 '[ "$(monitor Connectivity in_lane)" = "s \"full\"" ]' || true
in_lane systemctl start lane-needs-internet.service
check condition-online "the job $(in_lane test -e /run/lane-job-ran && echo ran || echo "did not run"), $(prop lane-needs-internet.service Result)" \
    '[ "$(prop lane-needs-internet.service Result)" = success ] && in_lane test -e /run/lane-job-ran'

# Offline: the server's end of the link goes down.
ip -n "$server" link set nl-server down
wait_until 5 '[ "$(monitor Connectivity in_lane)" = "s \"none\"" ]' || true
in_lane rm -f /run/lane-job-ran
in_lane systemctl start lane-needs-internet.service || true
skipped=$(in_lane journalctl -u lane-needs-internet.service --no-pager -o cat | grep -c "Skipped due to 'exec-condition'" || true)
check condition-offline "the job $(in_lane test -e /run/lane-job-ran && echo ran || echo "did not run"), skipped $skipped time(s), $(prop lane-needs-internet.service ActiveState)/$(prop lane-needs-internet.service Result)" \
    '[ "$skipped" = 1 ] && ! in_lane test -e /run/lane-job-ran && [ "$(prop lane-needs-internet.service Result)" = success ] &&
     [ "$(prop lane-needs-internet.service ActiveState)" != failed ]'
# wait-online while offline (with a 2 s limit instead of 60): it fails, and says why.
in_lane sh -c 'mkdir -p /run/systemd/system/netobserver-wait-online.service.d && printf "[Service]\nExecStart=\nExecStart=/usr/bin/netobserver --system wait --timeout 2\n" >/run/systemd/system/netobserver-wait-online.service.d/short.conf'
in_lane systemctl daemon-reload
in_lane systemctl restart netobserver-wait-online.service 2>/dev/null || true
why=$(in_lane journalctl -u netobserver-wait-online.service --no-pager -o cat | grep "not online after" | tail -1)
check wait-online-offline "$(prop netobserver-wait-online.service ActiveState): ${why:-no reason logged}" \
    '[ "$(prop netobserver-wait-online.service ActiveState)" = failed ] && grep -q "not online after 2 s: none" <<<"$why"'
in_lane rm -rf /run/systemd/system/netobserver-wait-online.service.d
in_lane systemctl daemon-reload
ip -n "$server" link set nl-server up
in_lane systemctl restart netobserver-wait-online.service || true
check wait-online-again "$(prop netobserver-wait-online.service ActiveState) once the Host answers again" \
    '[ "$(prop netobserver-wait-online.service ActiveState)" = active ]'

if [ -n "$deb" ]; then
    in_lane env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q netobserver >"$lane/apt.log" 2>&1 || true
    left=$(in_lane sh -c 'ls -d /var/lib/netobserver /usr/sbin/netobserverd /usr/lib/systemd/system/netobserver.service /usr/share/dbus-1/system.d/org.netobserver.Monitor.conf 2>/dev/null' || true)
    check package-purged "${left:-nothing left} (unit $(in_lane systemctl is-active netobserver.service 2>/dev/null || true))" \
        '[ -z "$left" ] && ! in_lane pgrep -x netobserverd'
fi

if [ -n "${LANE_PAUSE:-}" ]; then echo "paused: nsenter -t $pid1 -a; rm $lane/pause to go on" >&2; touch "$lane/pause"; while [ -e "$lane/pause" ]; do sleep 0.2; done; fi
failed_units=$(in_lane systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')
check still-no-failed-unit "${failed_units:-none failed}" '[ -z "$failed_units" ]'

# Power off, then nothing of the lane is left.
off=$(date +%s%N)
in_lane systemctl poweroff >/dev/null 2>&1 || true
for _ in $(seq 200); do kill -0 "$pid1" 2>/dev/null || break; sleep 0.05; done
check poweroff "systemd gone $(ms_since "$off") ms after poweroff" '! kill -0 "$pid1"'
wait "$launcher" 2>/dev/null || true
launcher=""
pid1=""
ip netns del "$server"
find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true
mounts=$(grep -c "$lane" /proc/self/mountinfo || true)
check nothing-left "mounts naming the lane: $mounts, cgroup $([ -d "$cgroup" ] && echo left || echo removed), netns $(ip netns list | grep -c "$server" || true)" \
    '[ "$mounts" = 0 ] && [ ! -d "$cgroup" ] && ! ip netns list | grep -q "$server"'

echo "lane: $passed passed, $failed failed"
[ "$failed" = 0 ]
