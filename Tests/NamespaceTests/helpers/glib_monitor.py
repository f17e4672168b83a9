#!/usr/bin/python3
"""A GLib program asking GNetworkMonitor, as every GLib program does. One JSON line per event on
stdout: the monitor it got, each GObject notify, each network-changed; commands on stdin:
`reach ADDRESS` (can_reach) and `reach-async ADDRESS` (can_reach_async), `state`."""
import json
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

monitor = Gio.NetworkMonitor.get_default()


def say(kind, **fields):
    fields.update(kind=kind, t=time.monotonic(), wall=time.time())
    print(json.dumps(fields), flush=True)


def values():
    return dict(available=monitor.get_network_available(),
                connectivity=monitor.get_connectivity().value_nick,
                metered=monitor.get_network_metered())


def notified(_monitor, spec):
    value = monitor.get_property(spec.name)
    say("notify", property=spec.name, value=getattr(value, "value_nick", value))


def error_name(error):
    return Gio.IOErrorEnum(error.code).value_nick if error.domain == "g-io-error-quark" else error.message


def reach_done(_monitor, result, address):
    try:
        say("reach", address=address, mode="async", result="ok" if monitor.can_reach_finish(result) else "no")
    except GLib.Error as error:
        say("reach", address=address, mode="async", result=error_name(error))


def command(channel, _condition):
    line = channel.readline()
    if not line:
        loop.quit()
        return False
    words = line.split()
    if words[:1] == ["state"]:
        say("state", **values())
    elif words[:1] == ["reach"] and len(words) == 2:
        try:
            say("reach", address=words[1], mode="sync",
                result="ok" if monitor.can_reach(Gio.NetworkAddress.new(words[1], 443), None) else "no")
        except GLib.Error as error:
            say("reach", address=words[1], mode="sync", result=error_name(error))
    elif words[:1] == ["reach-async"] and len(words) == 2:
        monitor.can_reach_async(Gio.NetworkAddress.new(words[1], 443), None, reach_done, words[1])
    return True


monitor.connect("notify", notified)
monitor.connect("network-changed", lambda _m, available: say("changed", signal_available=available, **values()))
say("start", type=type(monitor).__gtype__.name, **values())
GLib.io_add_watch(GLib.IOChannel.unix_new(sys.stdin.fileno()), GLib.IO_IN | GLib.IO_HUP, command)
loop = GLib.MainLoop()
loop.run()
