"""Shared helpers for the integration clients: a connection to the test bus,
signal collection on a GLib main loop, and checks that fail loudly."""
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

NAME = "org.netobserver.Monitor"
PATH = "/org/netobserver/Monitor"
IFACE = "org.netobserver.Monitor"
PROPS = "org.freedesktop.DBus.Properties"
ERR = "org.freedesktop.DBus.Error."

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)


def connect(address):
    bus = dbus.bus.BusConnection(address)
    return bus, bus.get_object(NAME, PATH)


def check(condition, message):
    if not condition:
        print("FAIL: " + message)
        sys.exit(1)


def expect_error(name, call, *args, **kwargs):
    """Runs call and checks it fails with the D-Bus error `name`; returns the message."""
    try:
        call(*args, **kwargs)
    except dbus.DBusException as e:
        check(e.get_dbus_name() == name, "expected %s, got %s: %s" % (name, e.get_dbus_name(), e.get_dbus_message()))
        return e.get_dbus_message()
    check(False, "expected %s, call succeeded" % name)


def pump(seconds):
    """Runs the GLib loop for a while, so queued signals are delivered."""
    context = GLib.MainContext.default()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        context.iteration(False)
        time.sleep(0.002)


class Signals:
    """Collects PropertiesChanged and StatusChanged from the service."""

    def __init__(self, bus):
        self.changed = []
        self.status = []
        bus.add_signal_receiver(lambda i, c, inv: self.changed.append((str(i), dict(c), list(inv))),
                                "PropertiesChanged", PROPS, path=PATH)
        bus.add_signal_receiver(lambda s, h: self.status.append((str(s), str(h))), "StatusChanged", IFACE, path=PATH)
        pump(0.1)  # AddMatch goes out before the test acts

    def clear(self):
        pump(0.2)
        self.changed.clear()
        self.status.clear()
