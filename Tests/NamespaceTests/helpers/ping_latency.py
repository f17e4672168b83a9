"""Peer.Ping round trips to the service for a while: ping_latency.py ADDRESS SECONDS.
Prints `p50 p99 max count` in milliseconds: how long the service's loop kept a caller waiting."""
import sys
import time

import dbus

address, seconds = sys.argv[1], float(sys.argv[2])
bus = dbus.bus.BusConnection(address)
peer = dbus.Interface(bus.get_object("org.netobserver.Monitor", "/org/netobserver/Monitor"), "org.freedesktop.DBus.Peer")
times = []
end = time.monotonic() + seconds
while time.monotonic() < end:
    start = time.monotonic()
    peer.Ping(timeout=60)
    times.append((time.monotonic() - start) * 1000)
    time.sleep(0.01)
times.sort()
print("%.2f %.2f %.2f %d" % (times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))], times[-1], len(times)),
      flush=True)
