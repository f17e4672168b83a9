"""Prints the live introspection of the Monitor object."""
import sys

from common import *

bus, obj = connect(sys.argv[1])
print(obj.Introspect(dbus_interface="org.freedesktop.DBus.Introspectable"))
