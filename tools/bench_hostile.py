"""make bench, hostile callers: bench_hostile.py ADDRESS DAEMON_PID NETNS.

- 10,000 random calls, AddTarget/RemoveTarget and huge names among them: the daemon's
  descriptors before and after, RSS growth, peak RSS, the slowest Ping behind them;
- one Get naming a 30 MiB property: the peak it costs;
- AddTarget/RemoveTarget churn for 10 s: echo requests and TCP SYNs per second leaving
  for the targets (counted by nftables in the daemon's namespace, which has only loopback).
Prints `hostile …` lines; asserts nothing (make test does)."""
import os
import random
import subprocess
import sys
import time

import dbus
import dbus.lowlevel

address, pid, netns = sys.argv[1], int(sys.argv[2]), sys.argv[3]
NAME, PATH, IFACE = "org.netobserver.Monitor", "/org/netobserver/Monitor", "org.netobserver.Monitor"
PROPS, PEER, TARGETS = "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Peer", "org.netobserver.Targets"


def status_kb(field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")


def fds():
    return len(os.listdir("/proc/%d/fd" % pid))


bus = dbus.bus.BusConnection(address)


def call(path, interface, member, signature="", args=(), no_reply=False):
    msg = dbus.lowlevel.MethodCallMessage(NAME, path, interface, member)
    if signature:
        msg.append(*args, signature=signature)
    if no_reply:
        msg.set_no_reply(True)
    return msg


def ping_ms():
    start = time.monotonic()
    bus.send_message_with_reply_and_block(call(PATH, PEER, "Ping"), 60)
    return (time.monotonic() - start) * 1000


rng = random.Random(20)
fds_before, rss_before = fds(), status_kb("VmRSS")
reset_peak()
slowest = 0.0
added = []
for i in range(10000):
    kind = rng.randrange(10)
    if kind == 0:
        msg = call(PATH, TARGETS, "AddTarget", "s", ["127.0.0.%d" % rng.randrange(2, 250)])
    elif kind == 1:
        msg = call(PATH, TARGETS, "RemoveTarget", "o", [rng.choice(added) if added else PATH + "/1"])
    elif kind == 2:
        msg = call(PATH, PROPS, "Get", "ss", [IFACE, "P" * rng.choice([300, 70000, 1 << 20])])
    elif kind == 3:
        msg = call(PATH, IFACE, "Wait", "u", [dbus.UInt32(rng.choice([0, 10, 100]))])
    elif kind == 4:
        msg = call(PATH, PROPS, "Set", "ssv", [IFACE, "Host", dbus.String("x" * rng.choice([10, 300, 1 << 20]), variant_level=1)])
    elif kind == 5:
        msg = call("/" + "p" * rng.choice([10, 5000]), IFACE, "Check")
    else:
        msg = call(PATH, PROPS, "GetAll", "s", [IFACE])
    if kind == 0:
        try:
            added.append(str(bus.send_message_with_reply_and_block(msg, 10).get_args_list()[0]))
        except dbus.DBusException:
            pass
    else:
        if rng.randrange(3) == 0:
            msg.set_no_reply(True)
        bus.send_message(msg)
    if i % 250 == 249:
        slowest = max(slowest, ping_ms())
for path in added:
    try:
        bus.send_message_with_reply_and_block(call(PATH, TARGETS, "RemoveTarget", "o", [path]), 10)
    except dbus.DBusException:
        pass
slowest = max(slowest, ping_ms())
time.sleep(1.0)
print("hostile 10000 random calls (AddTarget/RemoveTarget, 1 MiB names and Hosts among them): descriptors %d -> %d, "
      "RSS %d -> %d kB (%+d kB), peak %d kB, slowest Ping behind them %.1f ms"
      % (fds_before, fds(), rss_before, status_kb("VmRSS"), status_kb("VmRSS") - rss_before, status_kb("VmHWM"), slowest))

# One Get naming a 30 MiB property.
time.sleep(0.5)
rss = status_kb("VmRSS")
reset_peak()
start = time.monotonic()
try:
    bus.send_message_with_reply_and_block(call(PATH, PROPS, "Get", "ss", [IFACE, "P" * (30 << 20)]), 60)
    reply = "answered"
except dbus.DBusException as e:
    reply = "%s, %d-byte message" % (e.get_dbus_name().split(".")[-1], len((e.get_dbus_message() or "").encode()))
took = (time.monotonic() - start) * 1000
time.sleep(0.3)
print("hostile 30 MiB property name: %s in %.0f ms, peak %d kB over the %d kB before, RSS after %d kB"
      % (reply, took, status_kb("VmHWM") - rss, rss, status_kb("VmRSS")))

# AddTarget/RemoveTarget churn: what leaves for the targets, counted in the daemon's namespace.
def nft(command):
    subprocess.run(["ip", "netns", "exec", netns, "nft"] + command.split(), check=True)


nft("add table ip nobbench")
nft("add chain ip nobbench out { type filter hook output priority 0 ; }")
nft("add rule ip nobbench out icmp type echo-request counter")
nft("add rule ip nobbench out tcp flags syn tcp dport 443 counter")
added, refused, removed = 0, 0, 0
start = time.monotonic()
while time.monotonic() - start < 10:
    try:
        path = bus.send_message_with_reply_and_block(call(PATH, TARGETS, "AddTarget", "s", ["127.0.0.77"]), 10).get_args_list()[0]
        added += 1
        bus.send_message_with_reply_and_block(call(PATH, TARGETS, "RemoveTarget", "o", [path]), 10)
        removed += 1
    except dbus.DBusException:
        refused += 1
elapsed = time.monotonic() - start
time.sleep(1.5)
counters = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "table", "ip", "nobbench"],
                          stdout=subprocess.PIPE, text=True).stdout
packets = [int(line.split("packets")[1].split()[0]) for line in counters.splitlines() if "packets" in line]
nft("delete table ip nobbench")
echo, syn = (packets + [0, 0])[:2]
print("hostile AddTarget/RemoveTarget churn for %.0f s: %d added and removed, %d refused (LimitsExceeded); "
      "%d echo requests and %d SYNs left for the targets, %.1f packets/s (the default target probes 1/s on its own)"
      % (elapsed, added, refused, echo, syn, (echo + syn) / (elapsed + 1.5)))
