#!/usr/bin/env bash
# `make install` into a temporary DESTDIR, then: every file in place with its mode, the unit
# clean under systemd-analyze verify, the policy well-formed and accepted by a dbus-daemon
# that includes it, and `make uninstall` leaving nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d /tmp/netobserver-install.XXXXXX)
local_root=$(mktemp -d /tmp/netobserver-install-local.XXXXXX)
bus_pid=""
cleanup() {
    [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null || true
    rm -rf -- "$root" "$local_root"
}
trap cleanup EXIT
fail() { echo "install check failed: $*" >&2; exit 1; }

# Under a umask that would make private directories: everything still readable by the bus, systemd and GLib.
(umask 077; make -s install DESTDIR="$root" PREFIX=/usr >/dev/null 2>&1) || fail "make install"
private=$(find "$root/usr" -type d ! -perm 755 | sed "s|^$root||")
[ -z "$private" ] || fail "directories not 0755 under umask 077: $private"
expect() {
    local path=$root/usr/$1 mode=$2
    [ -f "$path" ] || fail "missing $1"
    [ "$(stat -c %a "$path")" = "$mode" ] || fail "$1 has mode $(stat -c %a "$path"), not $mode"
}
expect sbin/netobserverd 755
expect bin/netobserver 755
expect share/dbus-1/system.d/org.netobserver.Monitor.conf 644
expect share/dbus-1/system-services/org.netobserver.Monitor.service 644
expect share/dbus-1/interfaces/org.netobserver.Monitor.xml 644
expect lib/systemd/system/netobserver.service 644
expect lib/systemd/system/netobserver-wait-online.service 644
expect lib/sysusers.d/netobserver.conf 644
expect share/man/man8/netobserverd.8 644
expect share/man/man1/netobserver.1 644
expect share/bash-completion/completions/netobserver 644
expect share/zsh/vendor-completions/_netobserver 644
expect share/fish/vendor_completions.d/netobserver.fish 644
expect share/doc/netobserver/netobserver-metrics.service 644
gio_modules=$(pkg-config --define-variable=prefix=/usr --variable=giomoduledir gio-2.0)
expect "${gio_modules#/usr/}/libgionetobserver.so" 644
# A staged tree must not ship GIO's cache: the target's own gio-querymodules writes it.
[ ! -e "$root$gio_modules/giomodule.cache" ] || fail "make install with DESTDIR wrote giomodule.cache"
# The module brings no Swift runtime into the GLib programs that load it.
! readelf -d "$root$gio_modules/libgionetobserver.so" | grep -qi swift || fail "the GIO module links Swift"
grep -q '^ExecStart=/usr/bin/netobserver --system metrics --textfile ' "$root/usr/share/doc/netobserver/netobserver-metrics.service" || fail "metrics example ExecStart"
grep -q '^ExecStart=/usr/sbin/netobserverd --system$' "$root/usr/lib/systemd/system/netobserver.service" || fail "ExecStart path"
# No session-bus activation: a client's call on the session bus must never start a private daemon.
[ ! -e "$root/usr/share/dbus-1/services/org.netobserver.Monitor.service" ] || fail "a session-bus activation file is installed"
# The bus starts the service as the user the unit runs it as, never as root.
unit_user=$(sed -n 's/^User=//p' "$root/usr/lib/systemd/system/netobserver.service")
activation_user=$(sed -n 's/^User=//p' "$root/usr/share/dbus-1/system-services/org.netobserver.Monitor.service")
[ -n "$unit_user" ] && [ "$unit_user" = "$activation_user" ] || fail "activation User=$activation_user, unit User=$unit_user"
for limit in MemoryMax TasksMax LimitNOFILE; do
  grep -q "^$limit=" "$root/usr/lib/systemd/system/netobserver.service" || fail "the unit sets no $limit"
done

# systemd-analyze checks that ExecStart exists: point it at the installed copy. The wait-online
# unit is verified beside the service it requires.
sed "s|^ExecStart=/usr/sbin/|ExecStart=$root/usr/sbin/|" "$root/usr/lib/systemd/system/netobserver.service" >"$root/netobserver.service"
sed "s|^ExecStart=/usr/bin/|ExecStart=$root/usr/bin/|" "$root/usr/lib/systemd/system/netobserver-wait-online.service" >"$root/netobserver-wait-online.service"
grep -q '^ExecStart=/usr/bin/netobserver --system wait --timeout 60$' "$root/usr/lib/systemd/system/netobserver-wait-online.service" || fail "wait-online ExecStart"
out=$(systemd-analyze verify --man=no "$root/netobserver.service" "$root/netobserver-wait-online.service" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify says: $out"

# The metrics example, as Debian's node_exporter directory is: verified like the service's unit.
sed "s|^ExecStart=/usr/bin/|ExecStart=$root/usr/bin/|" "$root/usr/share/doc/netobserver/netobserver-metrics.service" >"$root/netobserver-metrics.service"
out=$(systemd-analyze verify --man=no "$root/netobserver-metrics.service" 2>&1) || fail "systemd-analyze verify (metrics): $out"
[ -z "$out" ] || fail "systemd-analyze verify says of the metrics unit: $out"
! grep -q '^DynamicUser=yes' "$root/netobserver-metrics.service" || fail "a dynamic user cannot write Debian's root-owned textfile directory"

# Libraries come from the system: no run path of the binaries' own ($ORIGIN).
for binary in sbin/netobserverd bin/netobserver; do
  if readelf -d "$root/usr/$binary" | grep -E 'R(UN)?PATH' | grep -q 'ORIGIN'; then
    fail "$binary searches its own directory for libraries: $(readelf -d "$root/usr/$binary" | grep -E 'R(UN)?PATH')"
  fi
done

xmllint --noout "$root/usr/share/dbus-1/system.d/org.netobserver.Monitor.conf" || fail "policy is not well-formed"
cat >"$root/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$root/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow user="*"/></policy>
  <include>$root/usr/share/dbus-1/system.d/org.netobserver.Monitor.conf</include>
</busconfig>
CONF
dbus-daemon --config-file="$root/bus.conf" --nofork --nopidfile --print-address=1 >"$root/address" 2>"$root/bus.log" &
bus_pid=$!
for _ in $(seq 1 200); do [ -s "$root/address" ] && break; kill -0 "$bus_pid" 2>/dev/null || break; sleep 0.01; done
[ -s "$root/address" ] || fail "dbus-daemon refused the policy: $(cat "$root/bus.log")"

make -s uninstall DESTDIR="$root" PREFIX=/usr >/dev/null || fail "make uninstall"
left=$(find "$root/usr" -type f | wc -l)
[ "$left" = 0 ] || fail "make uninstall left $left files"
echo "install checks: 12 files with their modes, the three units verified, no \$ORIGIN run path, unit limits, activation user, policy loaded by dbus-daemon, uninstall complete"

# The default PREFIX=/usr/local: the policy where dbus-daemon reads it, zsh's completion where Debian's zsh looks,
# and a plain word about the GIO module, which GLib loads from its own directory only.
out=$(umask 077; make -s install DESTDIR="$local_root" 2>&1) || fail "make install PREFIX=/usr/local: $out"
[ -f "$local_root/etc/dbus-1/system.d/org.netobserver.Monitor.conf" ] || fail "a /usr/local install put the policy where dbus-daemon does not read it"
[ -f "$local_root/usr/local/share/zsh/site-functions/_netobserver" ] || fail "a /usr/local install put zsh's completion where zsh does not look"
[ -f "$local_root/usr/local/lib/systemd/system/netobserver.service" ] || fail "a /usr/local install has no unit"
echo "$out" | grep -q "GIO_EXTRA_MODULES" || fail "a /usr/local install says nothing of the GIO module: $out"
private=$(find "$local_root" -mindepth 1 -type d ! -perm 755 | sed "s|^$local_root||")
[ -z "$private" ] || fail "directories not 0755 under umask 077: $private"
make -s uninstall DESTDIR="$local_root" >/dev/null 2>&1 || fail "make uninstall PREFIX=/usr/local"
left=$(find "$local_root" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install check (PREFIX=/usr/local, umask 077): policy, completions, unit in place, GIO module note given"
