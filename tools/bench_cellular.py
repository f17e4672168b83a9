#!/usr/bin/env python3
"""ModemManager and NetworkManager (make bench): a modem generation change →
PropertiesChanged at a client; start-up → first complete verdict with both services
present; the idle cost of following them. The services are python3-dbusmock on a
private bus handed to the daemon as its system bus; the daemon runs in NETNS (loopback
only) probing 127.0.0.1, and the modem's net port is `lo`.
Usage: bench_cellular.py DAEMON NETNS"""
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

import procstat

daemon_path, netns = sys.argv[1:3]
NAME, PATH, IFACE = "org.netobserver.Monitor", "/org/netobserver/Monitor", "org.netobserver.Monitor"
MM, MM_PATH, MODEM = "org.freedesktop.ModemManager1", "/org/freedesktop/ModemManager1", "org.freedesktop.ModemManager1.Modem"
LTE, UMTS = 1 << 14, 1 << 5

work = tempfile.mkdtemp(prefix="netobserver-cellular-")
bus_process = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
                                "--address=unix:path=%s/bus" % work], stdout=subprocess.PIPE, text=True)
address = bus_process.stdout.readline().strip()
env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address, DBUS_SESSION_BUS_ADDRESS=address)
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)
children = []


def has_name(name):
    return bool(bus.name_has_owner(name))


def spawn_mock(arguments, name):
    process = subprocess.Popen([sys.executable, "-m", "dbusmock", "--system"] + arguments, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(process)
    while not has_name(name):
        time.sleep(0.01)
    return process


def mock(path):
    return dbus.Interface(bus.get_object(MM, path), "org.freedesktop.DBus.Mock")


def start_services():
    spawn_mock(["-m", MM, MM_PATH, MM], MM)
    modem = MM_PATH + "/Modem/0"
    ports = dbus.Array([dbus.Struct(("cdc-wdm0", dbus.UInt32(6))), dbus.Struct(("lo", dbus.UInt32(2)))], signature="(su)")
    properties = dbus.Dictionary({"Ports": ports, "AccessTechnologies": dbus.UInt32(LTE)}, signature="sv")
    mock(MM_PATH).AddObject(modem, MODEM, properties, dbus.Array([], signature="(ssss)"))
    mock(MM_PATH).EmitSignal("org.freedesktop.DBus.ObjectManager", "InterfacesAdded", "oa{sa{sv}}",
                             [dbus.ObjectPath(modem), dbus.Dictionary({MODEM: properties}, signature="sa{sv}")])
    spawn_mock(["-t", "networkmanager"], "org.freedesktop.NetworkManager")
    nm = dbus.Interface(bus.get_object("org.freedesktop.NetworkManager", "/org/freedesktop"), "org.freedesktop.DBus.Mock")
    device = nm.AddEthernetDevice("lo", "lo", 100)
    dev = dbus.Interface(bus.get_object("org.freedesktop.NetworkManager", device), "org.freedesktop.DBus.Mock")
    dev.AddProperty("org.freedesktop.NetworkManager.Device", "Metered", dbus.UInt32(1))


def start_daemon(interval="1000"):
    state = tempfile.mkdtemp(dir=work)
    started = time.monotonic()
    process = subprocess.Popen(["nsenter", "--net=/run/netns/" + netns, daemon_path, "--address", address,
                                "--state-dir", state, "--host", "127.0.0.1", "--interval", interval], env=env,
                               stderr=subprocess.DEVNULL)
    return process, started


def stop(process):
    process.terminate()
    process.wait()


def first_verdict(expect):
    """Milliseconds from spawning the daemon until GetAll shows `expect`."""
    process, started = start_daemon()
    while not has_name(NAME):
        time.sleep(0.0005)
    props = dbus.Interface(bus.get_object(NAME, PATH, introspect=False), "org.freedesktop.DBus.Properties")
    while True:
        values = props.GetAll(IFACE)
        if all(values[k] == v for k, v in expect.items()):
            break
        time.sleep(0.0005)
    elapsed = (time.monotonic() - started) * 1000
    stop(process)
    return elapsed


def wakeups(pid):
    # Every thread of the daemon and of its blocking helper, voluntary and not.
    return procstat.wakeups(pid, involuntary=True)


try:
    # Start-up without the services, then with both present.
    baseline = statistics.median(first_verdict({"Status": "other"}) for _ in range(5))
    start_services()
    complete = {"Status": "cellular", "AccessTechnology": "4g", "Metered": True}
    with_services = statistics.median(first_verdict(complete) for _ in range(5))

    # Generation changes: our PropertiesChanged against ModemManager's, both seen by this client.
    process, _ = start_daemon()
    while not has_name(NAME):
        time.sleep(0.01)
    props = dbus.Interface(bus.get_object(NAME, PATH, introspect=False), "org.freedesktop.DBus.Properties")
    while props.Get(IFACE, "AccessTechnology") != "4g":
        time.sleep(0.01)
    loop = GLib.MainLoop()
    theirs, ours = [], []
    bus.add_signal_receiver(lambda i, c, inv: theirs.append(time.monotonic_ns()) if "AccessTechnologies" in c else None,
                            "PropertiesChanged", "org.freedesktop.DBus.Properties", path=MM_PATH + "/Modem/0")
    bus.add_signal_receiver(lambda i, c, inv: (ours.append(time.monotonic_ns()), loop.quit()) if "AccessTechnology" in c else None,
                            "PropertiesChanged", "org.freedesktop.DBus.Properties", path=PATH)
    modem = mock(MM_PATH + "/Modem/0")
    delays = []
    for i in range(100):
        count = len(ours)
        modem.UpdateProperties(MODEM, {"AccessTechnologies": dbus.UInt32(UMTS if i % 2 == 0 else LTE)})
        GLib.timeout_add(2000, loop.quit)
        while len(ours) == count:
            loop.run()
        delays.append((ours[-1] - theirs[-1]) / 1000)
    stop(process)

    # Idle: Interval at its maximum, so no probe falls in the minute measured.
    process, _ = start_daemon(interval="3600000")
    while not has_name(NAME):
        time.sleep(0.01)
    time.sleep(3)
    pid = int(subprocess.check_output(["pgrep", "-f", "-n", "--", "--interval 3600000"]).split()[0])
    before = wakeups(pid)
    time.sleep(60)
    idle = wakeups(pid) - before
    stop(process)

    delays.sort()
    print("cellular: generation change -> PropertiesChanged after ModemManager's own: median %.0f us, p90 %.0f us, max %.0f us (%d changes)"
          % (statistics.median(delays), delays[int(len(delays) * 0.9)], delays[-1], len(delays)))
    print("cellular: start -> first complete verdict (cellular, 4g, metered) %.1f ms; without ModemManager/NetworkManager "
          "(first verdict) %.1f ms (medians of 5)" % (with_services, baseline))
    print("cellular: idle with both services present: %d wake-ups in 60 s (Interval 3600000: no probe in that minute)" % idle)
finally:
    for child in children:
        child.terminate()
        child.wait()
    bus_process.terminate()
    bus_process.wait()
    shutil.rmtree(work, ignore_errors=True)
