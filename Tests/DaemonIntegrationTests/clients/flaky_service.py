#!/usr/bin/python3
"""A stand-in for the service on the bus at argv[1] whose first reads fail: it takes
org.netobserver.Monitor, answers the first GetAll with an error (MODE fail) or not at all
(MODE hang), and the later ones with Connectivity `limited`. One second after taking the name it
says Connectivity `portal` in a PropertiesChanged. Prints "ready" once it owns the name, then a
line per GetAll; runs until killed.
Usage: flaky_service.py ADDRESS fail|hang"""
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

NAME = "org.netobserver.Monitor"
PATH = "/org/netobserver/Monitor"
PROPERTIES = "org.freedesktop.DBus.Properties"

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
address, mode = sys.argv[1], sys.argv[2]
bus = dbus.bus.BusConnection(address)


class Service(dbus.service.Object):
    reads = 0

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}", async_callbacks=("reply", "error"))
    def GetAll(self, interface, reply, error):
        Service.reads += 1
        print("GetAll", Service.reads, flush=True)
        if Service.reads == 1:
            if mode == "fail":
                error(dbus.exceptions.DBusException("not yet", name="org.freedesktop.DBus.Error.Failed"))
            return  # hang: never answered
        reply({"Connectivity": dbus.String("limited"), "Interface": dbus.String("lo"), "Metered": dbus.Boolean(False)})

    @dbus.service.signal(PROPERTIES, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


service = Service(bus, PATH)
bus.request_name(NAME, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
print("ready", flush=True)


def announce():
    service.PropertiesChanged(NAME, {"Connectivity": dbus.String("portal")}, dbus.Array([], signature="s"))
    return False


GLib.timeout_add(1000, announce)
GLib.MainLoop().run()
