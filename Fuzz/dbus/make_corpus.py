"""Writes the D-Bus fuzzer's seed corpus: real method calls to the service, in wire
format from GDBus's marshaller. Run with Debian's python3 (python3-gi)."""
import os
import sys

from gi.repository import Gio, GLib

NAME, PATH, IFACE = "org.netobserver.Monitor", "/org/netobserver/Monitor", "org.netobserver.Monitor"
PROPS, PEER, INTRO = "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable"
V = GLib.Variant

calls = [
    ("get-status", PATH, PROPS, "Get", V("(ss)", (IFACE, "Status")), 0),
    ("get-host", PATH, PROPS, "Get", V("(ss)", (IFACE, "Host")), 0),
    ("get-unknown", PATH, PROPS, "Get", V("(ss)", (IFACE, "Nope")), 0),
    ("getall", PATH, PROPS, "GetAll", V("(s)", (IFACE,)), 0),
    ("getall-empty", PATH, PROPS, "GetAll", V("(s)", ("",)), 0),
    ("set-host", PATH, PROPS, "Set", V("(ssv)", (IFACE, "Host", V("s", "198.18.0.9"))), 0),
    ("set-host-zone", PATH, PROPS, "Set", V("(ssv)", (IFACE, "Host", V("s", "fe80::1%eth0"))), 0),
    ("set-interval", PATH, PROPS, "Set", V("(ssv)", (IFACE, "Interval", V("u", 250))), 0),
    ("set-interval-string", PATH, PROPS, "Set", V("(ssv)", (IFACE, "Interval", V("s", "250"))), 0),
    ("set-family", PATH, PROPS, "Set", V("(ssv)", (IFACE, "AddressFamily", V("s", "ipv6"))), 0),
    ("set-nested", PATH, PROPS, "Set", V("(ssv)", (IFACE, "Host", V("v", V("s", "x")))), 0),
    ("set-status", PATH, PROPS, "Set", V("(ssv)", (IFACE, "Status", V("s", "wifi"))), 0),
    ("introspect", PATH, INTRO, "Introspect", None, 0),
    ("introspect-root", "/", INTRO, "Introspect", None, 0),
    ("introspect-org", "/org", INTRO, "Introspect", None, 0),
    ("ping", PATH, PEER, "Ping", None, 0),
    ("ping-args", "/x", PEER, "Ping", V("(s)", ("x",)), 0),
    ("machine-id", PATH, PEER, "GetMachineId", None, 0),
    ("check", PATH, IFACE, "Check", None, 0),
    ("check-noreply", PATH, IFACE, "Check", None, Gio.DBusMessageFlags.NO_REPLY_EXPECTED),
    ("wait-0", PATH, IFACE, "Wait", V("(u)", (0,)), 0),
    ("wait-100", PATH, IFACE, "Wait", V("(u)", (100,)), 0),
    ("wait-too-long", PATH, IFACE, "Wait", V("(u)", (3600001,)), 0),
    ("no-interface", PATH, None, "Check", None, 0),
    ("unknown-method", PATH, IFACE, "Frobnicate", V("(ay)", (b"xyz",)), 0),
    # The whole service: added targets, org.netobserver.Targets, the ObjectManager, long names.
    ("target-get-status", PATH + "/1", PROPS, "Get", V("(ss)", (IFACE, "Status")), 0),
    ("target-getall", PATH + "/2", PROPS, "GetAll", V("(s)", (IFACE,)), 0),
    ("target-set-host", PATH + "/1", PROPS, "Set", V("(ssv)", (IFACE, "Host", V("s", "198.18.0.7"))), 0),
    ("target-wait", PATH + "/2", IFACE, "Wait", V("(u)", (100,)), 0),
    ("targets-get", PATH, PROPS, "Get", V("(ss)", ("org.netobserver.Targets", "Targets")), 0),
    ("add-target", PATH, "org.netobserver.Targets", "AddTarget", V("(s)", ("198.18.0.9",)), 0),
    ("remove-target", PATH, "org.netobserver.Targets", "RemoveTarget", V("(o)", (PATH + "/1",)), 0),
    ("remove-default", PATH, "org.netobserver.Targets", "RemoveTarget", V("(o)", (PATH,)), 0),
    ("managed-objects", PATH, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", None, 0),
    ("set-check-url", PATH, PROPS, "Set", V("(ssv)", (IFACE, "CheckURL", V("s", "http://0x7f000001/"))), 0),
    ("get-long-name", PATH, PROPS, "Get", V("(ss)", (IFACE, "P" * 5000)), 0),
    # Quoted in full, its error would be over 64 KiB.
    ("get-huge-name", PATH + "/2", PROPS, "Get", V("(ss)", (IFACE, "P" * 70000)), 0),
]

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
os.makedirs(out, exist_ok=True)
for name, path, interface, member, body, flags in calls:
    message = Gio.DBusMessage.new_method_call(NAME, path, interface, member)
    if body is not None:
        message.set_body(body)
    message.set_flags(flags)
    message.set_serial(7)
    message.set_sender(":1.42")
    with open(os.path.join(out, name), "wb") as f:
        f.write(message.to_blob(Gio.DBusCapabilityFlags.NONE))
print("%d seeds in %s" % (len(calls), out))
