"""Writes the client's and the follower's seed corpora: signals and replies in wire
format from GDBus's marshaller. Run with Debian's python3 (python3-gi)."""
import os

from gi.repository import Gio, GLib

V = GLib.Variant
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PROPS, OM = "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.ObjectManager"
MODEM = "org.freedesktop.ModemManager1.Modem"


def signal(path, interface, member, body, sender):
    message = Gio.DBusMessage.new_signal(path, interface, member)
    message.set_body(body)
    message.set_serial(9)
    message.set_sender(sender)
    return message


def reply(body):
    call = Gio.DBusMessage.new_method_call(":1.3", "/", OM, "GetManagedObjects")
    call.set_serial(5)
    message = call.new_method_reply()
    message.set_body(body)
    message.set_serial(6)
    message.set_sender(":1.3")
    return message


def write(folder, name, message):
    os.makedirs(os.path.join(root, folder, "corpus"), exist_ok=True)
    with open(os.path.join(root, folder, "corpus", name), "wb") as f:
        f.write(message.to_blob(Gio.DBusCapabilityFlags.NONE))


monitor = "/org/netobserver/Monitor"
changed = {"Status": V("s", "wifi"), "Reachable": V("b", True), "Reason": V("s", "line\\x1b[2J%{A1:x:}"),
           "RoundTripTime": V("t", 1500), "Connectivity": V("s", "full"), "PortalURL": V("s", "http://p/%{F#f00}")}
write("client", "owner", signal(monitor, PROPS, "PropertiesChanged", V("(sa{sv}as)", ("org.netobserver.Monitor", changed, [])), ":1.7"))
write("client", "forged", signal(monitor, PROPS, "PropertiesChanged", V("(sa{sv}as)", ("org.netobserver.Monitor", changed, [])), ":1.99"))
write("client", "target", signal(monitor + "/3", PROPS, "PropertiesChanged",
                                 V("(sa{sv}as)", ("org.netobserver.Monitor", {"Status": V("s", "pwned")}, ["Host"])), ":1.7"))
write("client", "wrong-types", signal(monitor, PROPS, "PropertiesChanged",
                                      V("(sa{sv}as)", ("org.netobserver.Monitor", {"Status": V("u", 3), "Host": V("as", ["x"])}, [])), ":1.7"))

modem = "/org/freedesktop/ModemManager1/Modem/0"
interfaces = {MODEM: {"AccessTechnologies": V("u", 16384), "Ports": V("a(su)", [("wwan0", 2)])}, "org.other": {"X": V("s", "y")}}
write("follower", "managed", reply(V("(a{oa{sa{sv}}})", ({modem: interfaces, "/x": {"org.other": {}}},))))
write("follower", "added", signal("/org/freedesktop/ModemManager1", OM, "InterfacesAdded", V("(oa{sa{sv}})", (modem + "1", interfaces)), ":1.3"))
write("follower", "removed", signal("/org/freedesktop/ModemManager1", OM, "InterfacesRemoved", V("(oas)", (modem, [MODEM])), ":1.3"))
write("follower", "changed", signal(modem, PROPS, "PropertiesChanged",
                                    V("(sa{sv}as)", (MODEM, {"AccessTechnologies": V("u", 32768)}, ["Ports"])), ":1.3"))
write("follower", "getall", reply(V("(a{sv})", ({"AccessTechnologies": V("u", 2)},))))
print("client and follower seeds written")
