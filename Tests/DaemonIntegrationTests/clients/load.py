"""One of the concurrent load clients: rapid Gets with alternating Sets."""
import sys

import dbus

from common import *

bus, obj = connect(sys.argv[1])
gets, sets = int(sys.argv[2]), int(sys.argv[3])
props = dbus.Interface(obj, PROPS)
names = ["Status", "Host", "Reachable", "Interval", "Reason", "PacketLoss", "LastChange", "AddressFamily"]
every = max(1, gets // max(1, sets))
done_sets = 0
for i in range(gets):
    props.Get(IFACE, names[i % len(names)])
    if i % every == 0 and done_sets < sets:
        props.Set(IFACE, "Interval", dbus.UInt32(1000 if done_sets % 2 else 2000))
        done_sets += 1
while done_sets < sets:
    props.Set(IFACE, "Interval", dbus.UInt32(1000 if done_sets % 2 else 2000))
    done_sets += 1
print("ok %d gets %d sets" % (gets, done_sets))
