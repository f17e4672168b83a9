#!/usr/bin/env python3
"""For status bars and Prometheus (make bench): how long after StatusChanged a
`netobserver monitor --format waybar` line reaches its reader, and what the
`metrics --textfile` writer costs idle and per change.
Usage: bench_bars.py BUS_ADDRESS CLIENT"""
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

NAME, PATH, IFACE = "org.netobserver.Monitor", "/org/netobserver/Monitor", "org.netobserver.Monitor"
address, client = sys.argv[1:3]
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)
props = dbus.Interface(bus.get_object(NAME, PATH), "org.freedesktop.DBus.Properties")
loop = GLib.MainLoop()
signals = []
bus.add_signal_receiver(lambda *args: (signals.append(time.monotonic_ns()), loop.quit()),
                        signal_name="StatusChanged", dbus_interface=IFACE, path=PATH)
bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])


def wait_signal(count, timeout=5):
    deadline = time.monotonic() + timeout
    while len(signals) < count and time.monotonic() < deadline:
        GLib.timeout_add(int(timeout * 1000), loop.quit)
        loop.run()


# Line latency: a waybar module reading lines while Host flips between two addresses.
bar = subprocess.Popen([client, "--address", address, "monitor", "--format", "waybar"], stdout=subprocess.PIPE)
lines = []


def read_lines():
    for _ in bar.stdout:
        lines.append(time.monotonic_ns())


threading.Thread(target=read_lines, daemon=True).start()
time.sleep(0.5)
delays = []
for i in range(200):
    before_lines, before_signals = len(lines), len(signals)
    props.Set(IFACE, "Host", "127.0.0.%d" % (2 + i % 2))
    wait_signal(before_signals + 1)
    deadline = time.monotonic() + 2
    while len(lines) == before_lines and time.monotonic() < deadline:
        time.sleep(0.0002)
    if len(lines) > before_lines and len(signals) > before_signals:
        delays.append((lines[before_lines] - signals[before_signals]) / 1000)
bar.terminate()
bar.wait()
delays.sort()
print("waybar line after StatusChanged at a reader: median %.0f µs, p90 %.0f µs, max %.0f µs (%d changes; negative: the line came first)"
      % (statistics.median(delays), delays[int(len(delays) * 0.9)], delays[-1], len(delays)))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The textfile writer: idle, then 1,000 changes.
directory = tempfile.mkdtemp(prefix="netobserver-textfile-")
writer = subprocess.Popen([client, "--address", address, "metrics", "--textfile", directory + "/netobserver.prom"])
time.sleep(1)
idle_seconds = 30
start = cpu_seconds(writer.pid)
time.sleep(idle_seconds)
idle = cpu_seconds(writer.pid) - start
start = cpu_seconds(writer.pid)
count = len(signals)
for i in range(1000):
    props.Set(IFACE, "Host", "127.0.0.%d" % (2 + i % 2))
wait_signal(count + 1000, timeout=10)
time.sleep(0.5)
busy = cpu_seconds(writer.pid) - start
writer.terminate()
writer.wait()
print("metrics --textfile writer: idle %.2f s of CPU per hour (from %d s), %.0f µs of CPU per change (1,000 changes)"
      % (idle * 3600 / idle_seconds, idle_seconds, busy / 1000 * 1e6))
