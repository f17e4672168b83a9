"""Prints every StatusChanged, PropertiesChanged and OutageEnded of the Monitor as a JSON line.
Usage: watch.py BUS_ADDRESS"""
import json
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])


def emit(kind, payload):
    print(json.dumps({"t": time.monotonic(), "kind": kind, **payload}), flush=True)


bus.add_signal_receiver(lambda s, h: emit("status", {"status": str(s), "host": str(h)}),
                        "StatusChanged", "org.netobserver.Monitor", path="/org/netobserver/Monitor")
bus.add_signal_receiver(lambda i, c, inv: emit("props", {"changed": {str(k): (v if isinstance(v, (bool, int, float)) else str(v))
                                                                    for k, v in c.items()}}),
                        "PropertiesChanged", "org.freedesktop.DBus.Properties", path="/org/netobserver/Monitor")
bus.add_signal_receiver(lambda start, duration, blame: emit("outage", {"start": int(start), "duration": int(duration),
                                                                       "blame": str(blame)}),
                        "OutageEnded", "org.netobserver.Monitor", path="/org/netobserver/Monitor")
GLib.timeout_add(100, lambda: print("ready", flush=True) and False)
GLib.MainLoop().run()
