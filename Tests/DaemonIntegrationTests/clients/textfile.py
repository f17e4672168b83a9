"""netobserver metrics --textfile under fire: a reader hammers the file while 1,000 Sets
change the service; every read must be a whole exposition. Usage: textfile.py ADDRESS CLIENT DIR"""
import os
import subprocess
import sys
import threading
import time

import dbus

from common import IFACE, PROPS, check, connect

address, client, directory = sys.argv[1:4]
path = os.path.join(directory, "netobserver.prom")
writer = subprocess.Popen([client, "--address", address, "metrics", "--textfile", path], stderr=subprocess.PIPE)
for _ in range(500):
    if os.path.exists(path):
        break
    time.sleep(0.01)
check(os.path.exists(path), "the writer made the file")

families = ["netobserver_up", "netobserver_status", "netobserver_round_trip_seconds", "netobserver_packet_loss_ratio",
            "netobserver_last_change_timestamp_seconds", "netobserver_probes_sent_total",
            "netobserver_probes_answered_total", "netobserver_traffic", "netobserver_probes_skipped_total",
            "netobserver_partial", "netobserver_portal_seconds_remaining", "netobserver_blame",
            "netobserver_connectivity_seconds_total", "netobserver_asleep_seconds_total", "netobserver_outages_total"]
stop = False
reads = 0
versions = set()
problems = []


def hammer():
    global reads
    while not stop:
        with open(path) as f:
            text = f.read()
        reads += 1
        versions.add(text)
        lines = text.split("\n")
        whole = text.endswith("\n") and all(("# TYPE %s " % name) in text for name in families) \
            and lines[-2].startswith("netobserver_outages_total{")
        if not whole:
            problems.append(text)


reader = threading.Thread(target=hammer)
reader.start()
bus, obj = connect(address)
props = dbus.Interface(obj, PROPS)
for i in range(1000):
    # A new Host is a change every line of the file shows (its label).
    props.Set(IFACE, "Host", "198.18.0.%d" % (1 + i % 2))
time.sleep(0.3)
stop = True
reader.join()
writer.terminate()
writer.wait()

check(not problems, "%d partial reads, e.g. %r" % (len(problems), problems[:1]))
check(reads > 1000, "the reader read %d times" % reads)
check(len(versions) > 10, "the file was rewritten (%d versions seen)" % len(versions))
leftovers = [name for name in os.listdir(directory) if name != "netobserver.prom"]
check(not leftovers, "no temporary files left: %s" % leftovers)
print("ok %d reads, %d versions, none partial" % (reads, len(versions)))
