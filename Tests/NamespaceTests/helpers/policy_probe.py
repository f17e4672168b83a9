"""Tries one action on the Monitor as whoever runs it; prints "ok" or the D-Bus error name.
Usage: policy_probe.py BUS_ADDRESS get|getall|introspect|ping|check|wait|managed|set|add|remove|own
       policy_probe.py BUS_ADDRESS method INTERFACE MEMBER SIGNATURE: that method with zero values for its arguments"""
import sys

import dbus

NAME = PATH = None
address, action = sys.argv[1], sys.argv[2]
bus = dbus.bus.BusConnection(address)


def call(interface, member, signature="", args=()):
    return bus.call_blocking("org.netobserver.Monitor", "/org/netobserver/Monitor", interface, member, signature, args)


ZERO = {"u": dbus.UInt32(0), "s": "", "o": dbus.ObjectPath("/org/netobserver/Monitor/999"), "t": dbus.UInt64(0)}

try:
    if action == "method":
        interface, member, signature = sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else ""
        try:
            call(interface, member, signature, [ZERO[code] for code in signature])
        except dbus.DBusException as error:
            # The service's own answer (an unknown target, a bad argument) is not the policy's.
            if error.get_dbus_name() == "org.freedesktop.DBus.Error.AccessDenied":
                raise
    elif action == "get":
        call("org.freedesktop.DBus.Properties", "Get", "ss", ["org.netobserver.Monitor", "Status"])
    elif action == "getall":
        call("org.freedesktop.DBus.Properties", "GetAll", "s", ["org.netobserver.Monitor"])
    elif action == "introspect":
        call("org.freedesktop.DBus.Introspectable", "Introspect")
    elif action == "ping":
        call("org.freedesktop.DBus.Peer", "Ping")
    elif action == "check":
        call("org.netobserver.Monitor", "Check")
    elif action == "wait":
        call("org.netobserver.Monitor", "Wait", "u", [0])
    elif action == "history":
        call("org.netobserver.Monitor", "GetHistory", "u", [dbus.UInt32(10)])
    elif action == "managed":
        call("org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
    elif action == "add":
        call("org.netobserver.Targets", "AddTarget", "s", ["policy-target.test"])
    elif action == "remove":
        # The newest target there is (one this caller or root added), else a path that is none.
        paths = call("org.freedesktop.DBus.Properties", "Get", "ss", ["org.netobserver.Targets", "Targets"])
        call("org.netobserver.Targets", "RemoveTarget", "o",
             [paths[-1] if paths else dbus.ObjectPath("/org/netobserver/Monitor/999")])
    elif action == "set":
        call("org.freedesktop.DBus.Properties", "Set", "ssv", ["org.netobserver.Monitor", "Host", dbus.String("policy.test")])
    elif action == "own":
        bus.request_name("org.netobserver.Monitor", dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
    print("ok")
except dbus.DBusException as error:
    print(error.get_dbus_name())
