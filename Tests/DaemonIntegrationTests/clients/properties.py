"""Every property's type and access; valid and invalid Sets with the exact
error names, no state change and no signal on error; PropertiesChanged and
StatusChanged contents; malformed calls."""
import sys

import dbus

from common import *

bus, obj = connect(sys.argv[1])
props = dbus.Interface(obj, PROPS)
signals = Signals(bus)

expected = {
    "Status": (dbus.String, False), "Host": (dbus.String, True), "Reachable": (dbus.Boolean, False),
    "Interface": (dbus.String, False), "Address": (dbus.String, False), "Reason": (dbus.String, False),
    "RoundTripTime": (dbus.UInt64, False), "PacketLoss": (dbus.Double, False), "LastChange": (dbus.UInt64, False),
    "Interval": (dbus.UInt32, True), "Timeout": (dbus.UInt32, True), "FailureThreshold": (dbus.UInt32, True),
    "RecoveryThreshold": (dbus.UInt32, True), "AddressFamily": (dbus.String, True),
    "ProbesSent": (dbus.UInt64, False), "ProbesAnswered": (dbus.UInt64, False),
    "AccessTechnology": (dbus.String, False), "Metered": (dbus.Boolean, False),
    "Connectivity": (dbus.String, False), "ProbeMethod": (dbus.String, False), "CheckURL": (dbus.String, True),
    "PortalURL": (dbus.String, False), "Traffic": (dbus.String, False), "Evidence": (dbus.String, True),
    "ProbesSkipped": (dbus.UInt64, False),
    "Connectivity4": (dbus.String, False), "Connectivity6": (dbus.String, False),
    "Address4": (dbus.String, False), "Address6": (dbus.String, False),
    "Reason4": (dbus.String, False), "Reason6": (dbus.String, False),
    "RoundTripTime4": (dbus.UInt64, False), "RoundTripTime6": (dbus.UInt64, False),
    "Nat64Prefix": (dbus.String, False), "Nat64Source": (dbus.String, False), "Ipv4Path": (dbus.String, False),
    "PortalAPI": (dbus.String, False), "PortalVenueURL": (dbus.String, False), "PortalSecondsRemaining": (dbus.UInt64, False),
    "SecureCheckURL": (dbus.String, True), "CheckEcho": (dbus.Boolean, True), "Partial": (dbus.Boolean, False),
    "Gateway4": (dbus.String, False), "Gateway6": (dbus.String, False),
    "Blame": (dbus.String, False), "Neighbor4": (dbus.String, False), "Neighbor6": (dbus.String, False),
    "TimeInState": (dbus.Dictionary, False),
    "Dns": (dbus.String, False), "DnsServer": (dbus.String, False), "DnsTransport": (dbus.String, False),
    "DnsRoundTripTime": (dbus.UInt64, False), "DnsProbeZone": (dbus.String, True),
    "Probing": (dbus.String, True), "IdleInterval": (dbus.UInt32, True),
}
all_props = props.GetAll(IFACE)
check(set(all_props) == set(expected), "GetAll keys: %s" % sorted(all_props))
everything = dict(props.GetAll(""))
targets_props = dict(props.GetAll("org.netobserver.Targets"))
check(set(targets_props) == {"Targets"}, "org.netobserver.Targets has Targets: %s" % sorted(targets_props))
# TimeInState counts seconds: a second may pass between the two calls.
timeless = lambda values: {k: v for k, v in values.items() if k != "TimeInState"}
check(timeless(everything) == timeless({**dict(all_props), **targets_props}), "GetAll('') is every interface's properties")
check("TimeInState" in everything, "GetAll('') has TimeInState too")
for name, (kind, writable) in expected.items():
    value = props.Get(IFACE, name)
    check(type(value) is kind, "%s is %s, expected %s" % (name, type(value).__name__, kind.__name__))
    check(type(all_props[name]) is kind, "GetAll %s type" % name)
    if not writable:
        msg = expect_error(ERR + "PropertyReadOnly", props.Set, IFACE, name, value)
        check(name in msg, "read-only message names the property: " + msg)
print("ok types and access")

# The daemon runs in a namespace with only loopback: no route to its Host.
check(props.Get(IFACE, "Status") == "none", "no route, no connection")
check(props.Get(IFACE, "Reason") == "no route to 198.18.0.1", "Reason says why: " + props.Get(IFACE, "Reason"))
check(props.Get(IFACE, "Address") == "198.18.0.1", "the literal is the address")
check(props.Get(IFACE, "Interface") == "", "no route, no interface")
check(props.Get(IFACE, "Reachable") == False, "not reachable")
check(props.Get(IFACE, "LastChange") > 1_600_000_000_000_000, "LastChange is realtime microseconds")
# Every probe fails to send here, and each one counts; the counters only grow.
sent = props.Get(IFACE, "ProbesSent")
check(sent >= 1 and props.Get(IFACE, "ProbesAnswered") == 0, "probes counted: %d sent, none answered" % sent)

# Invalid sets: exact error, old value kept, nothing emitted.
invalid = [
    ("Interval", dbus.UInt32(99), "100–3600000"), ("Interval", dbus.UInt32(3600001), "100–3600000"),
    ("Timeout", dbus.UInt32(9), "10–60000"), ("Timeout", dbus.UInt32(60001), "10–60000"),
    ("FailureThreshold", dbus.UInt32(0), "1–100"), ("FailureThreshold", dbus.UInt32(101), "1–100"),
    ("RecoveryThreshold", dbus.UInt32(0), "1–100"), ("RecoveryThreshold", dbus.UInt32(101), "1–100"),
    ("AddressFamily", dbus.String("ipv5"), "any, ipv4, ipv6"), ("AddressFamily", dbus.String(""), "any"),
    ("Host", dbus.String(""), "host name"), ("Host", dbus.String("has space"), "host name"),
    ("Host", dbus.String("a" * 64 + ".example"), "host name"), ("Host", dbus.String("256.1.1.1"), "host name"),
    ("Host", dbus.String("x" * 300), "host name"), ("Host", dbus.String("bad\u00e9.example"), "host name"),
]
signals.clear()
before = dict(props.GetAll(IFACE))
for name, value, range_text in invalid:
    msg = expect_error(ERR + "InvalidArgs", props.Set, IFACE, name, value)
    check(name in msg and range_text in msg, "message names %s and its range: %s" % (name, msg))
for name, value in [("Interval", dbus.String("1000")), ("Host", dbus.UInt32(1)), ("Timeout", dbus.Int32(100)),
                    ("AddressFamily", dbus.Boolean(True))]:
    expect_error(ERR + "InvalidArgs", props.Set, IFACE, name, value)
pump(0.3)
after = dict(props.GetAll(IFACE))
check(before == after, "a refused Set changes nothing")
check(signals.changed == [] and signals.status == [], "a refused Set emits nothing: %s %s" % (signals.changed, signals.status))
print("ok invalid sets refused")

# Unknown things and malformed calls.
expect_error(ERR + "UnknownProperty", props.Get, IFACE, "NoSuchProperty")
expect_error(ERR + "UnknownProperty", props.Set, IFACE, "NoSuchProperty", dbus.String("x"))
expect_error(ERR + "UnknownInterface", props.Get, "org.example.Nope", "Status")
expect_error(ERR + "UnknownInterface", props.GetAll, "org.example.Nope")
expect_error(ERR + "UnknownMethod", obj.NoSuchMethod, dbus_interface=IFACE)
expect_error(ERR + "UnknownInterface", obj.Check, dbus_interface="org.example.Nope")

def raw(interface, member, signature, args):
    """A call with exactly this signature, bypassing client-side introspection."""
    return bus.call_blocking(NAME, PATH, interface, member, signature, args)


for interface, member, signature, args in [
        (PROPS, "Get", "s", [IFACE]), (PROPS, "Get", "su", [IFACE, 1]), (PROPS, "GetAll", "", []),
        (PROPS, "Set", "sss", [IFACE, "Host", "x"]), (IFACE, "Wait", "s", ["x"]), (IFACE, "Wait", "", []),
        (IFACE, "Wait", "uu", [1, 2]), (IFACE, "Check", "s", ["extra"]), (IFACE, "Wait", "a{sv}", [{"a": 1}]),
        (IFACE, "Wait", "(ii)v", [(1, 2), dbus.String("x", variant_level=1)])]:
    msg = expect_error(ERR + "InvalidArgs", raw, interface, member, signature, args)
    check(member in msg, "InvalidArgs names the method: " + msg)
for name, value in [("CheckEcho", dbus.String("true")), ("CheckEcho", dbus.UInt32(1)),
                    ("SecureCheckURL", dbus.String("http://198.18.2.2/")), ("SecureCheckURL", dbus.String("https://127.0.0.1/")),
                    ("SecureCheckURL", dbus.Boolean(True)), ("PortalAPI", dbus.String("https://x/")), ("Partial", dbus.Boolean(True))]:
    try:
        props.Set(IFACE, name, value)
        check(False, "Set %s to %r was taken" % (name, value))
    except dbus.DBusException as error:
        check(error.get_dbus_name() in (ERR + "InvalidArgs", ERR + "PropertyReadOnly"),
              "Set %s to %r: %s" % (name, value, error.get_dbus_name()))
expect_error(ERR + "UnknownObject", bus.get_object(NAME, "/org/netobserver/Nope").Introspect,
             dbus_interface="org.freedesktop.DBus.Introspectable")
check(props.Get(IFACE, "Status") == "none", "still serving after bad calls")
print("ok malformed calls answered")

# Valid sets: stored, read back, one PropertiesChanged with the new value.
for name, value in [("Interval", dbus.UInt32(100)), ("Interval", dbus.UInt32(3600000)), ("Timeout", dbus.UInt32(10)),
                    ("Timeout", dbus.UInt32(60000)), ("FailureThreshold", dbus.UInt32(100)),
                    ("RecoveryThreshold", dbus.UInt32(100)), ("RecoveryThreshold", dbus.UInt32(1)),
                    ("CheckEcho", dbus.Boolean(True)), ("CheckEcho", dbus.Boolean(False)),
                    ("SecureCheckURL", dbus.String("https://198.18.2.2/generate_204")), ("SecureCheckURL", dbus.String(""))]:
    signals.clear()
    props.Set(IFACE, name, value)
    check(props.Get(IFACE, name) == value, "%s reads back %s" % (name, value))
    pump(0.2)
    check(signals.changed == [(IFACE, {name: value}, [])], "PropertiesChanged for %s: %s" % (name, signals.changed))
    check(signals.status == [], "no StatusChanged for %s" % name)

signals.clear()
props.Set(IFACE, "Interval", props.Get(IFACE, "Interval"))
pump(0.2)
check(signals.changed == [], "setting the same value emits nothing")

signals.clear()
props.Set(IFACE, "AddressFamily", dbus.String("ipv6"))
pump(0.2)
check(props.Get(IFACE, "AddressFamily") == "ipv6", "family stored")
check(signals.changed[0][1].get("AddressFamily") == "ipv6" and signals.changed[0][1].get("Status") == "unknown",
      "family and the Status reset in one PropertiesChanged: %s" % signals.changed)
check(props.Get(IFACE, "Reason") == "cannot resolve 198.18.0.1: Address family for hostname not supported",
      "an IPv4 literal under ipv6: " + props.Get(IFACE, "Reason"))

for host in ["example.org", "example.org.", "198.18.0.2", "fd00::2", "fe80::1%eth0", "a" * 63 + ".example"]:
    signals.clear()
    props.Set(IFACE, "Host", dbus.String(host))
    pump(0.2)
    check(props.Get(IFACE, "Host") == host, "Host reads back " + host)
    check(any(c[0] == IFACE and c[1].get("Host") == host for c in signals.changed), "Host PropertiesChanged: %s" % signals.changed)
    check(signals.status[:1] == [("unknown", host)], "StatusChanged(unknown, host) first: %s" % signals.status)
    check(all(h == host for _, h in signals.status), "every StatusChanged names the new host: %s" % signals.status)
    check(len(signals.status) == len(set(signals.status)), "once per Status change: %s" % signals.status)
print("ok valid sets, PropertiesChanged and StatusChanged")

check(obj.Check(dbus_interface=IFACE) == props.Get(IFACE, "Status"), "Check answers the verdict")
check(len(obj.GetMachineId(dbus_interface="org.freedesktop.DBus.Peer")) == 32, "Peer.GetMachineId")
obj.Ping(dbus_interface="org.freedesktop.DBus.Peer")
print("ok methods")
