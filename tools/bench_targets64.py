#!/usr/bin/env python3
"""64 targets (make bench): CPU at Interval 1000, RSS per target, how close together the
64 StatusChanged of a link going down reach a client, and GetManagedObjects latency.
The daemon runs in a network namespace with only loopback; the targets are 127.0.0.x,
so taking `lo` down is the fault. Usage: bench_targets64.py BUS_ADDRESS PID NETNS"""
import os
import statistics
import subprocess
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

import procstat

NAME, PATH = "org.netobserver.Monitor", "/org/netobserver/Monitor"
address, pid, netns = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)
root = bus.get_object(NAME, PATH)
targets = dbus.Interface(root, "org.netobserver.Targets")
props = dbus.Interface(root, "org.freedesktop.DBus.Properties")
manager = dbus.Interface(root, "org.freedesktop.DBus.ObjectManager")


def rss_kb():
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def cpu_seconds():
    # The daemon's and its blocking helper's.
    return procstat.cpu_seconds(pid)


subprocess.run(["ip", "-n", netns, "link", "set", "lo", "up"], check=True)
props.Set("org.netobserver.Monitor", "Host", "127.0.0.1")
time.sleep(1)
before = rss_kb()
def add(host):
    """AddTarget, waiting out the service's 16 additions per 10 s."""
    while True:
        try:
            return targets.AddTarget(host)
        except dbus.DBusException as e:
            if not e.get_dbus_name().endswith("LimitsExceeded"):
                raise
            time.sleep(0.5)


paths = [add("127.0.0.%d" % (i + 2)) for i in range(64)]
time.sleep(3)
after = rss_kb()

start_cpu, start = cpu_seconds(), time.monotonic()
time.sleep(30)
cpu = (cpu_seconds() - start_cpu) / (time.monotonic() - start) * 100

latencies = []
for _ in range(50):
    t = time.monotonic()
    manager.GetManagedObjects()
    latencies.append((time.monotonic() - t) * 1e6)

arrivals = {}
loop = GLib.MainLoop()


def on_status(status, host, path=None):
    if status == "none" and path not in arrivals:
        arrivals[path] = time.monotonic()
        if len(arrivals) >= 65:
            loop.quit()


bus.add_signal_receiver(on_status, "StatusChanged", "org.netobserver.Monitor", path_keyword="path")
bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
subprocess.run(["ip", "-n", netns, "link", "set", "lo", "down"], check=True)
GLib.timeout_add(5000, loop.quit)
loop.run()
spread = (max(arrivals.values()) - min(arrivals.values())) * 1000 if arrivals else float("nan")
subprocess.run(["ip", "-n", netns, "link", "set", "lo", "up"], check=True)
for path in paths:
    targets.RemoveTarget(path)
print("64 targets at Interval 1000: CPU %.2f %% of a core (30 s), RSS +%d kB in all (%.0f kB per target); "
      "GetManagedObjects median %.0f µs (p90 %.0f); lo down → StatusChanged none from %d objects, "
      "the last %.2f ms after the first"
      % (cpu, after - before, (after - before) / 64, statistics.median(latencies),
         sorted(latencies)[int(len(latencies) * 0.9)], len(arrivals), spread))
