#!/usr/bin/env python3
"""The GIO module (make bench): the service's PropertiesChanged → the value at a GLib program
(GNetworkMonitor with the module) and at a portal client (xdg-desktop-portal's NetworkMonitor,
asked again on `changed`); what loading the module adds to a GLib program's RSS; the module's
wake-ups while nothing changes. The daemon runs in NETNS (loopback only); Host toggles between
127.0.0.1 (full) and 198.18.0.1 (no route there: none).
Usage: bench_gio.py DAEMON NETNS MODULE_DIR HELPERS_DIR [TRIALS]"""
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

daemon_path, netns, modules, helpers = sys.argv[1:5]
trials = int(sys.argv[5]) if len(sys.argv) > 5 else 20
NAME, PATH, IFACE = "org.netobserver.Monitor", "/org/netobserver/Monitor", "org.netobserver.Monitor"
work = tempfile.mkdtemp(prefix="netobserver-gio-")
children = []


@atexit.register
def stop_children():
    for process in reversed(children):
        if process.poll() is None:
            process.terminate()
            process.wait()
    shutil.rmtree(work, ignore_errors=True)



def spawn(arguments, **options):
    process = subprocess.Popen(arguments, **options)
    children.append(process)
    return process


def private_bus(name):
    process = spawn(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
                     "--address=unix:path=%s/%s" % (work, name)], stdout=subprocess.PIPE, text=True)
    return process.stdout.readline().strip()


system = private_bus("system")
session = private_bus("session")
gio_env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=system, DBUS_SESSION_BUS_ADDRESS=session, GIO_EXTRA_MODULES=modules)
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(system)
spawn(["nsenter", "--net=/run/netns/" + netns, daemon_path, "--address", system, "--state-dir", work + "/state",
       "--host", "127.0.0.1"], stderr=subprocess.DEVNULL)
while not bus.name_has_owner(NAME):
    time.sleep(0.01)
properties = dbus.Interface(bus.get_object(NAME, PATH), "org.freedesktop.DBus.Properties")
while properties.Get(IFACE, "Connectivity") != "full":
    time.sleep(0.01)

portal = spawn(["/usr/libexec/xdg-desktop-portal", "--replace"], env=gio_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
session_bus = dbus.bus.BusConnection(session)
while not session_bus.name_has_owner("org.freedesktop.portal.Desktop"):
    time.sleep(0.01)

signals = []  # (t, Connectivity) as this client hears the service's PropertiesChanged
# dbus-monitor (libdbus, a bus monitor) stamps each message with the wall clock as the bus hands it over:
# the reference the GLib and portal clients' wall-clock times are measured from.
monitored = []  # (wall time, Connectivity)
monitor = spawn(["dbus-monitor", "--address", system, "type='signal',member='PropertiesChanged',path='%s'" % PATH],
                stdout=subprocess.PIPE)
monitor_state = {"time": None, "expect": False, "pending": bytearray()}


def monitor_lines(fd, _condition):
    data = os.read(fd, 65536)
    if not data:
        return False
    monitor_state["pending"].extend(data)
    while b"\n" in monitor_state["pending"]:
        line, _, rest = bytes(monitor_state["pending"]).partition(b"\n")
        monitor_state["pending"][:] = rest
        text = line.decode(errors="replace").strip()
        if text.startswith("signal time="):
            monitor_state["time"] = float(text.split()[1].split("=")[1])
        elif text == 'string "Connectivity"':
            monitor_state["expect"] = True
        elif monitor_state["expect"] and text.startswith("variant"):
            monitored.append((monitor_state["time"], text.split('"')[1]))
            monitor_state["expect"] = False
    return True


GLib.io_add_watch(monitor.stdout.fileno(), GLib.IO_IN | GLib.IO_HUP, monitor_lines)
bus.add_signal_receiver(lambda _i, changed, _inv: signals.append((time.monotonic(), str(changed["Connectivity"])))
                        if "Connectivity" in changed else None,
                        "PropertiesChanged", "org.freedesktop.DBus.Properties", NAME, PATH)
seen = {"glib": [], "portal": []}
seen_wall = {"glib": [], "portal": []}


def follow(name, arguments):
    process = spawn(arguments, env=gio_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pending = bytearray()

    # Read from the descriptor itself: a buffered reader would keep lines the watch never hears of.
    def lines_in(fd, _condition):
        data = os.read(fd, 65536)
        if not data:
            return False
        pending.extend(data)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            event = json.loads(line)
            if event["kind"] in ("changed", "start"):
                seen[name].append((event["t"], event["connectivity"]))
                seen_wall[name].append((event["wall"], event["connectivity"]))
        return True

    GLib.io_add_watch(process.stdout.fileno(), GLib.IO_IN | GLib.IO_HUP, lines_in)
    return process


follow("glib", [sys.executable, helpers + "/glib_monitor.py"])
follow("portal", [sys.executable, helpers + "/portal_client.py", session])
context = GLib.MainContext.default()


def iterate_until(condition, timeout=10):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        context.iteration(False) or time.sleep(0.0005)
    return condition()


iterate_until(lambda: seen["glib"] and seen["portal"])
latency = {"glib": [], "portal": []}
after_set = {"glib": [], "portal": [], "client": []}
words = {"glib": {"none": "local", "full": "full"}, "portal": {"none": 1, "full": 4}}
for trial in range(trials):
    host, expected = ("198.18.0.1", "none") if trial % 2 == 0 else ("127.0.0.1", "full")
    marks = {name: len(events) for name, events in seen.items()}
    signal_mark = len(signals)
    monitor_mark = len(monitored)
    asked = time.monotonic()
    properties.Set(IFACE, "Host", host)
    iterate_until(lambda: any(c == expected for _, c in signals[signal_mark:])
                  and all(any(c == words[n][expected] for _, c in seen[n][marks[n]:]) for n in seen))
    iterate_until(lambda: any(c == expected for _, c in monitored[monitor_mark:]), 2)
    heard = next((t for t, c in signals[signal_mark:] if c == expected), None)
    sent = next((t for t, c in monitored[monitor_mark:] if c == expected), None)
    for name in seen:
        at = next((t for t, c in seen[name][marks[name]:] if c == words[name][expected]), None)
        at_wall = next((t for t, c in seen_wall[name][marks[name]:] if c == words[name][expected]), None)
        if sent is not None and at_wall is not None:
            latency[name].append((at_wall - sent) * 1000)
        if at is not None:
            after_set[name].append((at - asked) * 1000)
    if heard is not None:
        after_set["client"].append((heard - asked) * 1000)
    time.sleep(0.05)


def rss_of_a_glib_program(with_module):
    script = ("from gi.repository import Gio, GLib\nm = Gio.NetworkMonitor.get_default()\n"
              "c = GLib.MainContext.default()\nimport time\nend = time.monotonic() + 0.3\n"
              "while time.monotonic() < end: c.iteration(False) or time.sleep(0.01)\n"
              "rss = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS')][0]\n"
              "print(type(m).__gtype__.name, rss)")
    env = gio_env if with_module else {k: v for k, v in gio_env.items() if k != "GIO_EXTRA_MODULES"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True).stdout.split()
    return out[0], int(out[1])


rss = {True: [], False: []}
portal.terminate()
for _ in range(7):
    for with_module in (False, True):
        kind, kilobytes = rss_of_a_glib_program(with_module)
        if with_module and kind != "NetobserverNetworkMonitor":
            sys.exit("bench_gio: the module was not loaded: %s" % kind)
        rss[with_module].append(kilobytes)


def wakeups_while_idle(with_module, seconds=10):
    script = "from gi.repository import Gio, GLib\nm = Gio.NetworkMonitor.get_default()\nGLib.MainLoop().run()"
    env = gio_env if with_module else {k: v for k, v in gio_env.items() if k != "GIO_EXTRA_MODULES"}
    process = subprocess.Popen([sys.executable, "-c", script], env=env)
    time.sleep(1)

    def switches():
        total = 0
        for task in os.listdir("/proc/%d/task" % process.pid):
            for line in open("/proc/%d/task/%s/status" % (process.pid, task)):
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        return total

    before = switches()
    time.sleep(seconds)
    woke = switches() - before
    process.terminate()
    process.wait()
    return woke


idle = {with_module: wakeups_while_idle(with_module) for with_module in (False, True)}


def figures(values):
    if not values:
        return "no change seen"
    values = sorted(values)
    return "median %.2f ms, p90 %.2f ms, max %.2f ms (%d changes)" % (
        statistics.median(values), values[int(0.9 * (len(values) - 1))], values[-1], len(values))


print("GIO module: PropertiesChanged (as dbus-monitor saw it leave the bus) → value at a GLib program (GNetworkMonitor): "
      + figures(latency["glib"]))
print("GIO module: PropertiesChanged (as dbus-monitor saw it leave the bus) → value at a portal client (GetStatus after changed): "
      + figures(latency["portal"]))
print("GIO module: from Set(Host): signal at a dbus-python client %s; GLib program %s; portal client %s" % (
    figures(after_set["client"]), figures(after_set["glib"]), figures(after_set["portal"])))
print("GIO module: GLib program RSS %d kB with the module, %d kB with GLib's netlink monitor: +%d kB (medians of 7)" % (
    statistics.median(rss[True]), statistics.median(rss[False]), statistics.median(rss[True]) - statistics.median(rss[False])))
print("GIO module: wake-ups of an idle GLib program in 10 s: %d with the module, %d without" % (idle[True], idle[False]))
