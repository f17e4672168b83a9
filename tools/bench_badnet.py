#!/usr/bin/env python3
"""The loop on a bad network (make bench), in namespaces made and removed here: Peer.Ping
round trips to the daemon while the network misbehaves, p50/p99/max in ms.

Cases: a blackholed resolver with a name CheckURL; a check server that accepts and never
answers; a router that drops echo requests and REJECTs TCP with ICMP; the link flapping.
Usage: bench_badnet.py DAEMON [SECONDS]"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

daemon_path = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 12
HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "NamespaceTests", "helpers")
tag = "nbb%d" % (os.getpid() % 10000)
ns = {role: "%s-%s" % (tag, role) for role in ("client", "router", "server")}
work = tempfile.mkdtemp(prefix="netobserver-badnet-")
children = []


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
    sh("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1 net.ipv4.icmp_ratelimit=0" % ns["router"])
    sh("ip -n %s route add default via 198.18.0.1" % ns["client"])
    sh("ip -n %s route add default via 198.18.2.1" % ns["server"])
    os.makedirs("/etc/netns/" + ns["client"], exist_ok=True)
    with open("/etc/netns/%s/resolv.conf" % ns["client"], "w") as f:
        f.write("nameserver 198.18.2.2\noptions timeout:8 attempts:1\n")
    with open("/etc/netns/%s/hosts" % ns["client"], "w") as f:
        f.write("127.0.0.1 localhost\n")


def teardown():
    for process in children:
        if process.poll() is None:
            process.kill()
            process.wait()
    for name in ns.values():
        sh("ip netns del " + name, check=False)
    shutil.rmtree("/etc/netns/" + ns["client"], ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)


def start(arguments):
    """A bus and the daemon (in the client namespace) on it; returns the bus address."""
    directory = tempfile.mkdtemp(dir=work)
    bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
                            "--address=unix:path=%s/bus" % directory], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
    children.append(bus)
    address = bus.stdout.readline().strip()
    log = open(os.path.join(directory, "daemon.log"), "w")
    daemon = subprocess.Popen(["ip", "netns", "exec", ns["client"], daemon_path, "--address", address,
                               "--state-dir", directory + "/state", "--interval", "200", "--timeout", "200"] + arguments,
                              stderr=log, env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address))
    children.append(daemon)
    time.sleep(0.5)
    return address, daemon, bus


def stop(daemon, bus):
    for process in (daemon, bus):
        process.terminate()
        process.wait()


def pings(address, during=None):
    """p50 p99 max of Peer.Ping round trips over `seconds`, while `during` (a callable run
    in steps of 0.2 s) disturbs the network."""
    probe = subprocess.Popen(["/usr/bin/python3", os.path.join(HELPERS, "ping_latency.py"), address, str(seconds)],
                             stdout=subprocess.PIPE, text=True)
    step = 0
    while probe.poll() is None:
        if during:
            during(step)
            step += 1
        time.sleep(0.2)
    return probe.stdout.read().split()


def helper(role, arguments):
    process = subprocess.Popen(["ip", "netns", "exec", ns[role]] + arguments, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    children.append(process)
    time.sleep(0.5)
    return process


def case(name, arguments, setup=None, cleanup=None, during=None):
    if setup:
        setup()
    address, daemon, bus = start(arguments)
    figures = pings(address, during)
    stop(daemon, bus)
    if cleanup:
        cleanup()
    if len(figures) == 4:
        print("badnet %s: Peer.Ping p50 %s ms, p99 %s ms, max %s ms (%s calls)" % (name, *figures), flush=True)
    else:
        print("badnet %s: no figures" % name, flush=True)


def router(command):
    sh("ip netns exec %s %s" % (ns["router"], command))


try:
    topology()
    case("blackholed resolver, name CheckURL", ["--host", "198.18.2.2", "--check-url", "http://check.example/generate_204"],
         setup=lambda: (router("iptables -I FORWARD -p udp --dport 53 -j DROP"), router("iptables -I FORWARD -p tcp --dport 53 -j DROP")),
         cleanup=lambda: router("iptables -F FORWARD"))
    server = None

    def hanging():
        global server
        server = helper("server", ["/usr/bin/python3", os.path.join(HELPERS, "check_server.py"), "198.18.2.2", "80", "hang"])

    case("check server accepts and never answers", ["--host", "198.18.2.2", "--check-url", "http://198.18.2.2/generate_204"],
         setup=hanging, cleanup=lambda: server.kill())
    case("rejecting router, silent host", ["--host", "198.18.2.99"],
         setup=lambda: (router("iptables -I FORWARD -p icmp --icmp-type echo-request -j DROP"),
                        router("iptables -I FORWARD -p tcp --dport 443 -j REJECT --reject-with icmp-port-unreachable")),
         cleanup=lambda: router("iptables -F FORWARD"))
    case("link flapping every 200 ms", ["--host", "198.18.2.2"],
         during=lambda step: sh("ip -n %s link set ca down" % ns["client"]) if step % 2 == 0 else
         sh("ip -n {0} link set ca up && ip -n {0} route replace default via 198.18.0.1".format(ns["client"])))
finally:
    teardown()
