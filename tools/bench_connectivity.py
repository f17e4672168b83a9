#!/usr/bin/env python3
"""Connectivity (make bench), in namespaces made and removed here: a captive portal
appearing on a network that was `full` (the default route moves to a portal's
router) → `portal` at a client; signing in → `full`; an ICMP-filtered network from
the start → first `full`; and what libcurl costs the idle daemon.
Usage: bench_connectivity.py DAEMON [DAEMON_WITHOUT_LIBCURL]"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

daemon_path = sys.argv[1]
baseline_path = sys.argv[2] if len(sys.argv) > 2 else None
NAME, PATH, IFACE = "org.netobserver.Monitor", "/org/netobserver/Monitor", "org.netobserver.Monitor"
HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "NamespaceTests", "helpers")
tag = "nbc%d" % (os.getpid() % 10000)
ns = {role: "%s-%s" % (tag, role) for role in ("client", "router", "portal", "server")}
CHECK = "http://198.18.2.2/generate_204"
LOGIN = "http://198.18.4.1:8080/login"
work = tempfile.mkdtemp(prefix="netobserver-connectivity-")
children = []


def sh(command):
    subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def in_ns(role, command):
    sh("ip netns exec %s %s" % (ns[role], command))


def topology():
    for name in ns.values():
        sh("ip netns add " + name)
        sh("ip -n %s link set lo up" % name)
    links = [("client", "ca", "router", "ra", "198.18.0.2/24", "198.18.0.1/24"),
             ("client", "cb", "portal", "pb", "198.18.4.2/24", "198.18.4.1/24"),
             ("router", "rs", "server", "sr", "198.18.2.1/24", "198.18.2.2/24")]
    for left, lname, right, rname, laddr, raddr in links:
        sh("ip link add %s netns %s type veth peer name %s netns %s" % (lname, ns[left], rname, ns[right]))
        sh("ip -n %s addr add %s dev %s" % (ns[left], laddr, lname))
        sh("ip -n %s addr add %s dev %s" % (ns[right], raddr, rname))
        sh("ip -n %s link set %s up" % (ns[left], lname))
        sh("ip -n %s link set %s up" % (ns[right], rname))
    in_ns("router", "sysctl -qw net.ipv4.ip_forward=1")
    sh("ip -n %s route add default via 198.18.0.1" % ns["client"])
    sh("ip -n %s route add default via 198.18.2.1" % ns["server"])
    # The portal's router: port 80 goes to its own login server, everything else is dropped.
    for rule in ["add table ip portal",
                 "add chain ip portal portal_nat { type nat hook prerouting priority -100 \\; }",
                 "add rule ip portal portal_nat iifname pb tcp dport 80 dnat to 198.18.4.1:8080"]:
        in_ns("portal", "nft " + rule)


def helper(role, arguments):
    log = open(os.path.join(work, "helper-%d.log" % len(children)), "w")
    process = subprocess.Popen(["ip", "netns", "exec", ns[role]] + arguments, stdout=log, stderr=subprocess.STDOUT)
    children.append(process)
    return process


def start_bus():
    process = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
                                "--address=unix:path=%s/bus" % work], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    children.append(process)
    return process.stdout.readline().strip()


address = None
bus = None


def start_daemon(path, extra, role="client"):
    state = tempfile.mkdtemp(dir=work)
    started = time.monotonic()
    process = subprocess.Popen(["ip", "netns", "exec", ns[role], path, "--address", address, "--state-dir", state,
                                "--host", "198.18.2.2"] + extra, stderr=subprocess.DEVNULL,
                               env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address))
    while not bus.name_has_owner(NAME):
        time.sleep(0.0005)
    return process, started


def stop(process):
    process.terminate()
    process.wait()


def props():
    return dbus.Interface(bus.get_object(NAME, PATH, introspect=False), "org.freedesktop.DBus.Properties")


def wait_for(name, value, timeout=20):
    p = props()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if p.Get(IFACE, name) == value:
            return True
        time.sleep(0.0005)
    raise RuntimeError("%s never became %s (it is %s, %s)" % (name, value, p.Get(IFACE, name), p.Get(IFACE, "Reason")))


def rss_kb(pid):
    """RSS and private dirty pages, kB."""
    values = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(("Rss:", "Private_Dirty:")):
                values[line.split(":")[0]] = int(line.split()[1])
    return values.get("Rss", 0), values.get("Private_Dirty", 0)


try:
    topology()
    helper("server", [sys.executable, os.path.join(HELPERS, "check_server.py"), "198.18.2.2", "80", "204"])
    helper("portal", [sys.executable, os.path.join(HELPERS, "check_server.py"), "198.18.4.1", "8080", "302", LOGIN])
    time.sleep(0.5)
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    address = start_bus()
    bus = dbus.bus.BusConnection(address)

    # The portal appears: the default route moves to the portal's router.
    daemon, _ = start_daemon(daemon_path, ["--interval", "1000", "--timeout", "1000", "--check-url", CHECK])
    wait_for("Connectivity", "full")
    loop = GLib.MainLoop()
    seen = []
    bus.add_signal_receiver(lambda i, c, inv: (seen.append((time.monotonic(), str(c["Connectivity"]))), loop.quit())
                            if "Connectivity" in c else None,
                            "PropertiesChanged", "org.freedesktop.DBus.Properties", path=PATH)
    batch = subprocess.Popen(["ip", "-n", ns["client"], "-batch", "-"], stdin=subprocess.PIPE, text=True)
    appear, sign_in = [], []

    def until(value, timeout=15):
        end = time.monotonic() + timeout
        while not (seen and seen[-1][1] == value) and time.monotonic() < end:
            GLib.timeout_add(int(timeout * 1000), loop.quit)
            loop.run()
        return seen[-1][0] if seen and seen[-1][1] == value else None

    for i in range(10):
        # A network that has been `full` for a while: the check's token bucket (3, then one a
        # second) is refilled, as it is on a real machine between network changes.
        time.sleep(2.1)
        seen.clear()
        start = time.monotonic()
        batch.stdin.write("route replace default via 198.18.4.1\n")
        batch.stdin.flush()
        at = until("portal")
        if at:
            appear.append((at - start) * 1000)
        # Signing in: the portal lets the client through (its route goes back to the Internet's router).
        seen.clear()
        start = time.monotonic()
        batch.stdin.write("route replace default via 198.18.0.1\n")
        batch.stdin.flush()
        at = until("full")
        if at:
            sign_in.append((at - start) * 1000)
    batch.stdin.close()
    batch.wait()

    # Signing in: the Internet's router itself plays the portal, then lets the client through.
    def close_portal(drop):
        in_ns("router", "nft add table ip portal")
        in_ns("router", "nft add chain ip portal portal_nat { type nat hook prerouting priority -100 \\; }")
        in_ns("router", "nft add rule ip portal portal_nat iifname ra tcp dport 80 dnat to 198.18.0.1:8080")
        if drop:
            in_ns("router", "nft add chain ip portal portal_filter { type filter hook forward priority 0 \\; }")
            in_ns("router", "nft add rule ip portal portal_filter iifname ra drop")
    helper("router", [sys.executable, os.path.join(HELPERS, "check_server.py"), "198.18.0.1", "8080", "302", LOGIN])
    time.sleep(0.5)
    p = props()
    signed, retried = [], []
    for drop in [True] * 5 + [False] * 3:
        time.sleep(2.1)
        seen.clear()
        close_portal(drop)
        if not drop:
            # The host keeps answering: nothing but a new CheckURL looks again at once.
            p.Set(IFACE, "CheckURL", dbus.String("", variant_level=1))
            p.Set(IFACE, "CheckURL", dbus.String(CHECK, variant_level=1))
        if not until("portal"):
            raise RuntimeError("no portal")
        seen.clear()
        start = time.monotonic()
        in_ns("router", "nft delete table ip portal")
        at = until("full", timeout=15)
        if at:
            (signed if drop else retried).append((at - start) * 1000)
    stop(daemon)

    def first_full():
        """Milliseconds from spawning the daemon to Connectivity full, and how the host was heard."""
        daemon, started = start_daemon(daemon_path, ["--interval", "1000", "--timeout", "1000"])
        wait_for("Connectivity", "full")
        elapsed = (time.monotonic() - started) * 1000
        heard = props().Get(IFACE, "ProbeMethod")
        stop(daemon)
        return elapsed, heard

    # An ICMP-filtered network from the start, then an open one.
    in_ns("router", "iptables -I FORWARD -p icmp -j DROP")
    filtered = [first_full() for _ in range(5)]
    in_ns("router", "iptables -D FORWARD -p icmp -j DROP")
    open_network = [first_full()[0] for _ in range(5)]
    method = filtered[-1][1]
    filtered = [ms for ms, _ in filtered]

    # Memory, idle: this daemon with CheckURL off and on, and the build without libcurl.
    def idle_rss(path, extra):
        daemon, _ = start_daemon(path, ["--interval", "1000", "--timeout", "1000"] + extra)
        time.sleep(3)
        kb = rss_kb(daemon.pid)
        stop(daemon)
        return kb
    def median_pair(pairs):
        pairs = list(pairs)
        return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    rss_off = median_pair(idle_rss(daemon_path, []) for _ in range(3))
    rss_on = median_pair(idle_rss(daemon_path, ["--check-url", CHECK]) for _ in range(3))
    rss_base = median_pair(idle_rss(baseline_path, []) for _ in range(3)) if baseline_path else None

    print("connectivity: portal appearing (default route moved to a portal) -> portal at a client: median %.1f ms, "
          "max %.1f ms (%d runs)" % (statistics.median(appear), max(appear), len(appear)))
    print("connectivity: route back to the open network -> full: median %.1f ms, max %.1f ms" %
          (statistics.median(sign_in), max(sign_in)))
    print("connectivity: sign-in on a portal that drops everything else -> full: median %.0f ms, max %.0f ms (%d); "
          "on a portal that lets ICMP through (only the 10 s retry can notice): median %.0f ms, max %.0f ms (%d)" %
          (statistics.median(signed), max(signed), len(signed), statistics.median(retried), max(retried), len(retried)))
    print("connectivity: ICMP filtered from the start -> first full %.1f ms (ProbeMethod %s); ICMP open %.1f ms "
          "(medians of 5, from spawning the daemon)" % (statistics.median(filtered), method, statistics.median(open_network)))
    line = ("connectivity: idle RSS (private dirty) %d (%d) kB with CheckURL off, libcurl not loaded; %d (%d) kB with "
            "CheckURL on, libcurl loaded: %+d (%+d) kB" % (rss_off + rss_on + (rss_on[0] - rss_off[0], rss_on[1] - rss_off[1])))
    if rss_base:
        line += "; a build without libcurl: %d (%d) kB" % rss_base
    print(line)
finally:
    for child in reversed(children):
        child.terminate()
        child.wait()
    for name in ns.values():
        subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
