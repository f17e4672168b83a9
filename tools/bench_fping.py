#!/usr/bin/env python3
"""64 targets beside fping (make bench): the CPU the daemon spends watching 32 IPv4 + 32 IPv6 hosts at
Interval 1000, against `fping -l -p 1000` sending the same 64 probes a second, in the same namespace, in
turns. Two shapes: the targets added over D-Bus (AddTarget, kept in the state directory and restored at
each start), and the same hosts given as --target. The daemon's own Host is the first of them, so it
sends no probe fping does not. CPU is each process's scheduled time (/proc/PID/task/*/schedstat, ns),
the daemon's with its blocking helper's; medians of RUNS turns of SECONDS each.
Usage: bench_fping.py DAEMON [RUNS] [SECONDS]"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import dbus

import procstat

daemon = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 20
warm = 18  # a schedule reaches the Interval's grid within 16 probes
NAME, PATH = "org.netobserver.Monitor", "/org/netobserver/Monitor"
netns = "nob-fping-%d" % os.getpid()
hosts4 = ["198.18.64.%d" % (i + 1) for i in range(32)]
hosts6 = ["fd00::64:%x" % (i + 1) for i in range(32)]
hosts = [host for pair in zip(hosts4, hosts6) for host in pair]
work = tempfile.mkdtemp(prefix="netobserver-fping.")


def ip(*args):
    subprocess.run(["ip", "-n", netns] + list(args), check=True)


def in_netns(argv, **kwargs):
    return subprocess.Popen(["ip", "netns", "exec", netns] + argv, **kwargs)


def measure(pid, counted):
    time.sleep(warm)
    before, start = counted(pid), time.monotonic()
    time.sleep(seconds)
    return (counted(pid) - before) / (time.monotonic() - start) * 100


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start_bus():
    bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1",
                            "--address=unix:path=%s/bus" % work], stdout=subprocess.PIPE, text=True)
    return bus, bus.stdout.readline().strip()


def start_daemon(address, state, extra=()):
    process = in_netns(["setpriv", "--pdeathsig", "TERM", daemon, "--address", address, "--state-dir", state,
                        "--host", hosts[0]] + list(extra), stderr=subprocess.DEVNULL)
    connection = dbus.bus.BusConnection(address)
    deadline = time.monotonic() + 10
    while not connection.name_has_owner(NAME):
        if time.monotonic() > deadline:
            raise SystemExit("bench_fping: the daemon never took its name")
        time.sleep(0.05)
    return process, connection


def add_targets(connection):
    targets = dbus.Interface(connection.get_object(NAME, PATH), "org.netobserver.Targets")
    for host in hosts[1:]:
        while True:
            try:
                targets.AddTarget(host)
                break
            except dbus.DBusException as e:
                if not e.get_dbus_name().endswith("LimitsExceeded"):
                    raise
                time.sleep(0.5)


def daemon_turn(state, extra=()):
    bus, address = start_bus()
    process, _ = start_daemon(address, state, extra)
    try:
        # The process under `ip netns exec`/setpriv is the daemon itself: both exec.
        return measure(process.pid, procstat.scheduled_seconds)
    finally:
        stop(process)
        stop(bus)


def fping_turn():
    process = in_netns(["fping", "-l", "-p", "1000", "-q"] + hosts,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return measure(process.pid, lambda pid: procstat.scheduled_seconds(pid, with_helper=False))
    finally:
        stop(process)


try:
    subprocess.run(["ip", "netns", "add", netns], check=True)
    ip("link", "set", "lo", "up")
    for host in hosts4:
        ip("addr", "add", host + "/32", "dev", "lo")
    for host in hosts6:
        ip("addr", "add", host + "/128", "dev", "lo", "nodad")
    # Datagram ICMP sockets, as an unprivileged fping or the daemon would use them.
    subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"],
                   check=True)

    added = os.path.join(work, "added")
    os.mkdir(added)
    bus, address = start_bus()
    process, connection = start_daemon(address, added)
    add_targets(connection)
    time.sleep(1)
    stop(process)
    stop(bus)

    shapes = {"added over D-Bus": [], "given as --target": [], "fping": []}
    given = os.path.join(work, "given")
    os.mkdir(given)
    target_flags = [flag for host in hosts[1:] for flag in ("--target", host)]
    for _ in range(runs):
        shapes["added over D-Bus"].append(daemon_turn(added))
        shapes["fping"].append(fping_turn())
        shapes["given as --target"].append(daemon_turn(given, target_flags))
    fping = statistics.median(shapes["fping"])
    print("64 targets beside fping (32 IPv4 + 32 IPv6, Interval 1000, %d turns of %.0f s): fping -l -p 1000 %.2f %% "
          "of a core" % (runs, seconds, fping))
    for shape in ("added over D-Bus", "given as --target"):
        cpu = statistics.median(shapes[shape])
        print("  netobserverd, %s: %.2f %% of a core (runs %s), %.2f × fping"
              % (shape, cpu, " ".join("%.2f" % run for run in shapes[shape]), cpu / fping if fping else float("nan")))
finally:
    subprocess.run(["ip", "netns", "del", netns], stderr=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
