"""Writes the dns surface's seeds: answers as the resolver library receives them (first byte 0: to an A
question for web.test, 1: AAAA) and systemd-resolved's replies to ResolveHostname (2, in wire format from
GDBus's marshaller). Run with Debian's python3 (python3-gi)."""
import os
import struct

from gi.repository import Gio, GLib

folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(folder, exist_ok=True)


def write(name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def name(text):
    return b"".join(bytes([len(label)]) + label.encode() for label in text.split(".")) + b"\0"


def answer(qtype, rcode, records):
    header = struct.pack("!HHHHHH", 0x1234, 0x8180 | rcode, 1, len(records), 0, 0)
    body = name("web.test") + struct.pack("!HH", qtype, 1)
    for rtype, data in records:
        body += b"\xc0\x0c" + struct.pack("!HHIH", rtype, 1, 60, len(data)) + data
    return header + body


write("a", b"\0" + answer(1, 0, [(1, bytes([198, 18, 2, 2])), (1, bytes([198, 18, 2, 3]))]))
write("aaaa", b"\1" + answer(28, 0, [(28, bytes([0xfd] + [0] * 14 + [2]))]))
write("cname", b"\0" + answer(1, 0, [(5, name("other.test")), (1, bytes([198, 18, 2, 2]))]))
write("nxdomain", b"\0" + answer(1, 3, []))
write("servfail", b"\0" + answer(1, 2, []))


def reply(body):
    call = Gio.DBusMessage.new_method_call(":1.3", "/org/freedesktop/resolve1", "org.freedesktop.resolve1.Manager",
                                           "ResolveHostname")
    call.set_serial(5)
    message = call.new_method_reply()
    message.set_body(body)
    message.set_serial(6)
    return message.to_blob(Gio.DBusCapabilityFlags.NONE)


def error(name, text):
    call = Gio.DBusMessage.new_method_call(":1.3", "/org/freedesktop/resolve1", "org.freedesktop.resolve1.Manager",
                                           "ResolveHostname")
    call.set_serial(5)
    message = call.new_method_error_literal(name, text)
    message.set_serial(7)
    return message.to_blob(Gio.DBusCapabilityFlags.NONE)


addresses = [(2, 2, [198, 18, 2, 2]), (2, 10, [0xfd] + [0] * 15)]
write("resolved-reply", b"\2" + reply(GLib.Variant("(a(iiay)st)", (addresses, "web.test", (1 << 18) | (1 << 23)))))
write("resolved-nxdomain", b"\2" + error("org.freedesktop.resolve1.DnsError.NXDOMAIN", "no such name"))
write("resolved-timeout", b"\2" + error("org.freedesktop.DBus.Error.NoReply", "Did not receive a reply"))
print("dns seeds written")
