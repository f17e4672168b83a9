#!/usr/bin/env python3
"""Traffic as evidence (make bench), in namespaces made and removed here: the client's own TCP
connections go to three servers behind the router (198.18.2.3-5) while the daemon watches Host
198.18.2.2 there.

- blackhole under load: outage (every packet the router forwards from the client dropped) to
  Status none, median and max over TRIALS trials, at Interval 1000 and 30000, Evidence probes and traffic;
- probes per hour under steady load with Evidence traffic (against Interval 1000's 3,600);
- sampling cost with 100, 1,000 and 10,000 established connections: CPU per sample (the census as
  the daemon takes it) and the daemon's share of a core; the 3.5 s bound with 1,000;
- idle wake-ups per minute, against the probe schedule's.
Usage: bench_traffic.py DAEMON BENCH_BINARY [TRIALS]"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import dbus

from procstat import cpu_seconds, loop_wakeups, wakeups  # the daemon's and its blocking helper's

daemon_path, bench_path = sys.argv[1], sys.argv[2]
trials = int(sys.argv[3]) if len(sys.argv) > 3 else 10
HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "NamespaceTests", "helpers")
LOAD = os.path.join(HELPERS, "load.py")
tag = "nbt%d" % (os.getpid() % 10000)
ns = {role: "%s-%s" % (tag, role) for role in ("client", "router", "server")}
work = tempfile.mkdtemp(prefix="netobserver-traffic-")
children = []
IFACE = "org.netobserver.Monitor"
SERVERS = ["198.18.2.3", "198.18.2.4", "198.18.2.5"]


def sh(command, check=True):
    subprocess.run(command, shell=True, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def topology():
    for name in ns.values():
        sh("ip netns add " + name)
        sh("ip -n %s link set lo up" % name)
    for left, lname, right, rname, laddr, raddr in [("client", "ca", "router", "ra", "198.18.0.2/24", "198.18.0.1/24"),
                                                    ("router", "rs", "server", "sr", "198.18.2.1/24", "198.18.2.2/24")]:
        sh("ip link add %s netns %s type veth peer name %s netns %s" % (lname, ns[left], rname, ns[right]))
        sh("ip -n %s addr add %s dev %s" % (ns[left], laddr, lname))
        sh("ip -n %s addr add %s dev %s" % (ns[right], raddr, rname))
        sh("ip -n %s link set %s up" % (ns[left], lname))
        sh("ip -n %s link set %s up" % (ns[right], rname))
    for address in SERVERS:
        sh("ip -n %s addr add %s/24 dev sr" % (ns["server"], address))
    sh("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1" % ns["router"])
    sh("ip -n %s route add default via 198.18.0.1" % ns["client"])
    sh("ip -n %s route add default via 198.18.2.1" % ns["server"])
    sh("ip netns exec %s sysctl -qw net.ipv4.ip_local_port_range='10000 65000'" % ns["client"])


def teardown():
    for process in children:
        if process.poll() is None:
            process.kill()
            process.wait()
    for name in ns.values():
        sh("ip netns del " + name, check=False)
    shutil.rmtree(work, ignore_errors=True)


def helper(role, arguments):
    """A load.py in `role`'s namespace, once it said ready."""
    process = subprocess.Popen(["ip", "netns", "exec", ns[role], "/usr/bin/python3", LOAD] + arguments,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    children.append(process)
    process.stdout.readline()
    return process


def kill(process):
    if process.poll() is None:
        process.kill()
        process.wait()


class Daemon:
    def __init__(self, arguments):
        directory = tempfile.mkdtemp(dir=work)
        self.bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
                                     "--address=unix:path=%s/bus" % directory], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
        address = self.bus.stdout.readline().strip()
        self.process = subprocess.Popen(["ip", "netns", "exec", ns["client"], daemon_path, "--address", address,
                                         "--state-dir", directory + "/state", "--host", "198.18.2.2"] + arguments,
                                        stderr=subprocess.DEVNULL, env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address))
        connection = dbus.bus.BusConnection(address)
        for _ in range(200):
            if connection.name_has_owner(IFACE):
                break
            time.sleep(0.01)
        self.properties = dbus.Interface(connection.get_object(IFACE, "/org/netobserver/Monitor"),
                                         "org.freedesktop.DBus.Properties")

    def get(self, name):
        return self.properties.Get(IFACE, name)

    def until(self, name, value, timeout, step=0.005):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.get(name) == value:
                return True
            time.sleep(step)
        return False

    def pid(self):
        """The daemon's own PID (ip netns exec execs it)."""
        return self.process.pid

    def stop(self):
        kill(self.process)
        kill(self.bus)


def blackhole(on):
    sh("ip netns exec %s iptables -%s FORWARD -s 198.18.0.2 -j DROP" % (ns["router"], "I" if on else "D"))


def outage_trial(interval, evidence, extra=None):
    """Seconds from the blackhole to Status none, or None."""
    daemon = Daemon(["--interval", str(interval), "--timeout", "1000", "--failures", "2", "--evidence", evidence])
    load = None
    try:
        if not daemon.until("Status", "ethernet", 5):
            return None
        load = helper("client", ["client", "9400"] + SERVERS)
        if not daemon.until("Traffic", "flowing", 7):
            return None
        # At a random moment relative to the samples and probes.
        time.sleep(random.uniform(0.2, 1.2))
        # From the moment the rule is in (iptables takes some 10 ms to start and commit it).
        blackhole(True)
        started = time.monotonic()
        took = time.monotonic() - started if daemon.until("Status", "none", 40) else None
        blackhole(False)
        return took
    finally:
        if load:
            kill(load)
        daemon.stop()


def figures(name, values):
    found = [v for v in values if v is not None]
    if not found:
        print("traffic %s: no figures" % name, flush=True)
        return
    print("traffic %s: median %.2f s, max %.2f s, min %.2f s (%d of %d trials)" %
          (name, statistics.median(found), max(found), min(found), len(found), len(values)), flush=True)




try:
    topology()
    helper("server", ["serve", "9400"])
    for interval in (1000, 30000, 3600000):
        for evidence in ("probes", "traffic"):
            figures("blackhole under load, Interval %d, Evidence %s, outage to Status none" % (interval, evidence),
                    [outage_trial(interval, evidence) for _ in range(trials)])
    # Without traffic at 30000 the schedule alone decides: up to 32 s (two trials, for scale).
    daemon = Daemon(["--interval", "30000", "--timeout", "1000"])
    alone = []
    for _ in range(2):
        daemon.until("Status", "ethernet", 40)
        time.sleep(0.5)
        blackhole(True)
        started = time.monotonic()
        alone.append(time.monotonic() - started if daemon.until("Status", "none", 40, step=0.05) else None)
        blackhole(False)
        daemon.properties.Set(IFACE, "Interval", dbus.UInt32(1000))
        daemon.until("Status", "ethernet", 5)
        daemon.properties.Set(IFACE, "Interval", dbus.UInt32(30000))
    daemon.stop()
    figures("blackhole without traffic, Interval 30000, outage to Status none", alone)

    # Probes per hour under steady load.
    for evidence in ("probes", "traffic"):
        daemon = Daemon(["--interval", "1000", "--timeout", "1000", "--evidence", evidence])
        daemon.until("Status", "ethernet", 5)
        load = helper("client", ["client", "9400"] + SERVERS)
        daemon.until("Traffic", "flowing", 7)
        time.sleep(2)
        sent, skipped = int(daemon.get("ProbesSent")), int(daemon.get("ProbesSkipped"))
        time.sleep(60)
        sent, skipped = int(daemon.get("ProbesSent")) - sent, int(daemon.get("ProbesSkipped")) - skipped
        print("traffic probes per hour under steady load, Interval 1000, Evidence %s: %d sent, %d skipped" %
              (evidence, sent * 60, skipped * 60), flush=True)
        kill(load)
        daemon.stop()

    # Sampling cost by the number of established connections (idle ones to 198.18.2.3, plus the load).
    held = []
    for count in (100, 1000, 10000):
        more = count - sum(n for _, n in held)
        held.append((helper("client", ["idle", "9400", "198.18.2.3", str(more)]), more))
        cost = subprocess.run(["ip", "netns", "exec", ns["client"], bench_path, "sample-cost", "198.18.2.2", "198.18.0.2", "30"],
                              capture_output=True, text=True).stdout.strip()
        print("traffic census with %d idle connections: %s" % (count, cost), flush=True)
        daemon = Daemon(["--interval", "1000", "--timeout", "1000"])
        daemon.until("Status", "ethernet", 5)
        time.sleep(3)
        before, started = cpu_seconds(daemon.pid()), time.monotonic()
        time.sleep(20)
        share = (cpu_seconds(daemon.pid()) - before) / (time.monotonic() - started) * 100
        print("traffic daemon CPU (with its helper's) with %d idle connections (Interval 1000, probes and samples): %.2f %% of a core" %
              (count, share), flush=True)
        daemon.stop()
        if count == 1000:
            figures("blackhole under load with 1000 idle connections, Interval 30000, outage to Status none",
                    [outage_trial(30000, "probes") for _ in range(3)])
    for process, _ in held:
        kill(process)

    # Idle wake-ups: no connection at all.
    for interval in (1000, 30000, 3600000):
        daemon = Daemon(["--interval", str(interval), "--timeout", "1000"])
        daemon.until("Status", "ethernet", 5)
        time.sleep(2)
        before, loop_before, sent = wakeups(daemon.pid()), loop_wakeups(daemon.pid()), int(daemon.get("ProbesSent"))
        time.sleep(60)
        woke, sent = wakeups(daemon.pid()) - before, int(daemon.get("ProbesSent")) - sent
        loop_woke = loop_wakeups(daemon.pid()) - loop_before
        # The schedule's own per probe: its timer and its reply (a finished probe keeps no follow-up timer). The loop's
        # figure is the one earlier notes gave; the helper's threads also wait on their fsyncs (a history every 10 s).
        print("traffic idle wake-ups per minute, Interval %d: the loop %d, with the blocking helper's threads %d "
              "(probes sent: %d; the probe schedule's own: %d, 2 per probe: timer, reply)"
              % (interval, loop_woke, woke, sent, 2 * sent), flush=True)
        daemon.stop()
finally:
    teardown()
