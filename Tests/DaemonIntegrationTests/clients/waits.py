"""Wait: its timeout, the 64-per-client limit, and a vanished client's calls."""
import sys
import time

import dbus

from common import *

bus, obj = connect(sys.argv[1])

start = time.monotonic()
check(obj.Wait(dbus.UInt32(300), dbus_interface=IFACE) == False, "Wait times out with false")
elapsed = time.monotonic() - start
check(0.29 <= elapsed < 2.0, "Wait(300) took %.3f s" % elapsed)
check(obj.Wait(dbus.UInt32(0), dbus_interface=IFACE) == False, "Wait(0) answers at once")
msg = expect_error(ERR + "InvalidArgs", obj.Wait, dbus.UInt32(3600001), dbus_interface=IFACE)
check("timeout_ms" in msg and "3600000" in msg, "message names the argument and range: " + msg)
print("ok wait timeout")

# 64 pending calls are accepted; the 65th from the same client is refused.
replies, errors = [], []
for _ in range(64):
    obj.Wait(dbus.UInt32(600000), dbus_interface=IFACE, timeout=700,
             reply_handler=replies.append, error_handler=errors.append)
pump(0.5)
check(replies == [] and errors == [], "64 waits pending: %s %s" % (replies, errors))
expect_error(ERR + "LimitsExceeded", obj.Wait, dbus.UInt32(1000), dbus_interface=IFACE)

# Another client is not affected by this one's limit.
other_bus, other = connect(sys.argv[1])
check(other.Wait(dbus.UInt32(10), dbus_interface=IFACE) == False, "a second client still gets its Wait")
print("ok per-client limit")

# Short waits finish and free their slots.
bus2, obj2 = connect(sys.argv[1])
for _ in range(3):
    for _ in range(64):
        obj2.Wait(dbus.UInt32(50), dbus_interface=IFACE, reply_handler=replies.append, error_handler=errors.append)
    pump(0.4)
check(len(replies) == 192 and all(r == False for r in replies), "192 short waits answered false: %d" % len(replies))
check(errors == [], "no errors: %s" % errors[:3])
print("ok slots freed after timeouts")
print("unique " + bus.get_unique_name())
bus.close()  # the daemon must drop this client's 64 pending calls
time.sleep(0.5)
