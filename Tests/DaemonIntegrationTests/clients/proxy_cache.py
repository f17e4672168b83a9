"""A GDBusProxy (what desktop applets use) keeps its cached properties right."""
import sys

import gi
from gi.repository import Gio, GLib

address = sys.argv[1]
connection = Gio.DBusConnection.new_for_address_sync(
    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
proxy = Gio.DBusProxy.new_sync(connection, Gio.DBusProxyFlags.NONE, None, "org.netobserver.Monitor",
                               "/org/netobserver/Monitor", "org.netobserver.Monitor", None)
writer = Gio.DBusConnection.new_for_address_sync(
    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def cached(name):
    value = proxy.get_cached_property(name)
    return None if value is None else value.unpack()


for name in ["Status", "Host", "Reachable", "Interface", "Address", "Reason", "LastChange", "Interval", "Timeout",
             "FailureThreshold", "RecoveryThreshold", "AddressFamily", "RoundTripTime", "PacketLoss"]:
    if proxy.get_cached_property(name) is None:
        fail("proxy has no cached " + name)

events = []
proxy.connect("g-properties-changed", lambda p, changed, invalidated: events.append(("props", changed.unpack())))
proxy.connect("g-signal", lambda p, sender, signal, params: events.append((signal, params.unpack(), cached("Host"))))


def set_property(name, value):
    writer.call_sync("org.netobserver.Monitor", "/org/netobserver/Monitor", "org.freedesktop.DBus.Properties", "Set",
                     GLib.Variant("(ssv)", ("org.netobserver.Monitor", name, value)), None, Gio.DBusCallFlags.NONE, 5000,
                     None)


def run_until(predicate, seconds=5):
    context = GLib.MainContext.default()
    deadline = GLib.get_monotonic_time() + seconds * 1_000_000
    while not predicate() and GLib.get_monotonic_time() < deadline:
        context.iteration(False)
    return predicate()


for i, interval in enumerate([250, 500, 750]):
    set_property("Interval", GLib.Variant("u", interval))
    if not run_until(lambda: cached("Interval") == interval):
        fail("cached Interval %s after Set %d" % (cached("Interval"), interval))

set_property("Host", GLib.Variant("s", "example.org"))
if not run_until(lambda: any(e[0] == "StatusChanged" for e in events)):
    fail("no StatusChanged through the proxy")
status_event = [e for e in events if e[0] == "StatusChanged"][0]
if status_event[1] != ("unknown", "example.org"):
    fail("StatusChanged args %s" % (status_event[1],))
if status_event[2] != "example.org":
    fail("the cache already has the new Host when StatusChanged arrives, not %s" % status_event[2])
run_until(lambda: False, 0.5)
direct = writer.call_sync("org.netobserver.Monitor", "/org/netobserver/Monitor", "org.freedesktop.DBus.Properties", "GetAll",
                          GLib.Variant("(s)", ("org.netobserver.Monitor",)), None, Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
for name in ["Status", "Reachable", "Reason", "Host", "Address", "Interval"]:
    if cached(name) != direct[name]:
        fail("cached %s is %r, the service says %r" % (name, cached(name), direct[name]))
print("ok proxy cache tracks %d changes" % len(events))
