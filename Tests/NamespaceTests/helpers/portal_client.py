#!/usr/bin/python3
"""A sandboxed program's view: org.freedesktop.portal.NetworkMonitor on the session bus at argv[1].
One JSON line per event: GetStatus at start and on `status` from stdin, and each `changed` signal
(followed by a GetStatus, as portal clients do)."""
import json
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

PORTAL = ("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop", "org.freedesktop.portal.NetworkMonitor")
bus = Gio.DBusConnection.new_for_address_sync(
    sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)


def say(kind, **fields):
    fields.update(kind=kind, t=time.monotonic(), wall=time.time())
    print(json.dumps(fields), flush=True)


def call(method, reply_type):
    return bus.call_sync(PORTAL[0], PORTAL[1], PORTAL[2], method, None, GLib.VariantType(reply_type),
                         Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]


def status(kind):
    values = call("GetStatus", "(a{sv})")
    fields = dict(available=values["available"], metered=values["metered"], connectivity=values["connectivity"])
    if kind == "status":
        # The single-value methods too, which older portal clients use.
        fields.update(get_available=call("GetAvailable", "(b)"), get_metered=call("GetMetered", "(b)"),
                      get_connectivity=call("GetConnectivity", "(u)"))
    say(kind, **fields)


def command(channel, _condition):
    line = channel.readline()
    if not line:
        loop.quit()
        return False
    if line.strip() == "status":
        status("status")
    return True


bus.signal_subscribe(PORTAL[0], PORTAL[2], "changed", PORTAL[1], None, Gio.DBusSignalFlags.NONE,
                     lambda *_: status("changed"))
status("start")
GLib.io_add_watch(GLib.IOChannel.unix_new(sys.stdin.fileno()), GLib.IO_IN | GLib.IO_HUP, command)
loop = GLib.MainLoop()
loop.run()
