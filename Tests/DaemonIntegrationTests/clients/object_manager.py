"""A GDBusObjectManagerClient (what desktop code uses for several objects) follows
targets being added and removed, and every target's property changes."""
import sys
import time

from gi.repository import Gio, GLib

address = sys.argv[1]
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
connection = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
writer = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
manager = Gio.DBusObjectManagerClient.new_sync(connection, Gio.DBusObjectManagerClientFlags.NONE,
                                               "org.netobserver.Monitor", "/org/netobserver/Monitor", None, None, None)
events = []
manager.connect("object-added", lambda m, o: events.append(("added", o.get_object_path())))
manager.connect("object-removed", lambda m, o: events.append(("removed", o.get_object_path())))
manager.connect("interface-proxy-properties-changed",
                lambda m, o, p, changed, inv: events.append(("changed", o.get_object_path(), changed.unpack())))


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def pump_until(condition, seconds=5):
    context = GLib.MainContext.default()
    end = time.monotonic() + seconds
    while time.monotonic() < end and not condition():
        context.iteration(False)
        time.sleep(0.002)
    return condition()


def call(interface, method, signature, args, path="/org/netobserver/Monitor"):
    return writer.call_sync("org.netobserver.Monitor", path, interface, method, GLib.Variant(signature, args), None,
                            Gio.DBusCallFlags.NONE, 5000, None).unpack()


initial = sorted(o.get_object_path() for o in manager.get_objects())
if initial:
    fail("no added targets yet, but the manager lists %s" % initial)
(first,) = call("org.netobserver.Targets", "AddTarget", "(s)", ("198.18.0.5",))
(second,) = call("org.netobserver.Targets", "AddTarget", "(s)", ("198.18.0.6",))
if not pump_until(lambda: ("added", second) in events):
    fail("object-added not seen: %s" % events)
objects = sorted(o.get_object_path() for o in manager.get_objects())
if objects != sorted([first, second]):
    fail("objects %s" % objects)
proxy = manager.get_interface(first, "org.netobserver.Monitor")
if proxy is None or proxy.get_cached_property("Host").unpack() != "198.18.0.5":
    fail("the first target's proxy caches its Host")

call("org.freedesktop.DBus.Properties", "Set", "(ssv)", ("org.netobserver.Monitor", "Interval", GLib.Variant("u", 2500)),
     path=second)
if not pump_until(lambda: any(e[0] == "changed" and e[1] == second and e[2].get("Interval") == 2500 for e in events)):
    fail("the second target's PropertiesChanged not seen: %s" % events)
if manager.get_interface(second, "org.netobserver.Monitor").get_cached_property("Interval").unpack() != 2500:
    fail("the second target's cache")
if manager.get_interface(first, "org.netobserver.Monitor").get_cached_property("Interval").unpack() != 1000:
    fail("the first target kept its own Interval")

call("org.netobserver.Targets", "RemoveTarget", "(o)", (first,))
if not pump_until(lambda: ("removed", first) in events):
    fail("object-removed not seen: %s" % events)
if sorted(o.get_object_path() for o in manager.get_objects()) != [second]:
    fail("after removal: %s" % [o.get_object_path() for o in manager.get_objects()])
print("ok", events[:2])
