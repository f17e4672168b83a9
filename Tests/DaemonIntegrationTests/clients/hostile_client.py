"""The client and the files it writes, under hostile peers: hostile_client.py ADDRESS CLIENT GROUP.

spoof    — another connection sends PropertiesChanged straight to a running `monitor` (a unicast
           signal reaches it whatever its match rules say); nothing of it may be printed.
fake     — a stand-in service owns the name and says hostile things; the client must ignore a
           Status or Connectivity outside their words and print no control character or markup.
planted  — `metrics --textfile` in a directory where another user planted its temporary file."""
import atexit
import os
import select
import subprocess
import sys
import time

import dbus
import dbus.service
from gi.repository import GLib

from common import IFACE, NAME, PATH, PROPS, check, connect, pump

ADDRESS, CLIENT, GROUP = sys.argv[1], sys.argv[2], sys.argv[3]


class Output:
    """A running client's stdout, read without blocking."""

    def __init__(self, arguments):
        self.process = subprocess.Popen([CLIENT, "--address", ADDRESS] + arguments, stdout=subprocess.PIPE)
        self.text = b""
        # A failed check exits at once: the clients go too, or they would hold the test's pipe open.
        atexit.register(self.stop)

    def read(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pump(0.01)
            ready, _, _ = select.select([self.process.stdout], [], [], 0.01)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    break
                self.text += chunk
        return self.text

    def lines(self):
        return self.text.decode("utf-8", "replace").split("\n")[:-1]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()


def unique_name_of(bus, pid):
    driver = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
    for name in driver.ListNames(dbus_interface="org.freedesktop.DBus"):
        if name.startswith(":"):
            try:
                if driver.GetConnectionUnixProcessID(name, dbus_interface="org.freedesktop.DBus") == pid:
                    return str(name)
            except dbus.DBusException:
                pass
    return None


def wait_for_lines(output, count, seconds=10):
    end = time.monotonic() + seconds
    while len(output.lines()) < count and time.monotonic() < end:
        output.read(0.05)
    return output.lines()


def spoof():
    bus, _ = connect(ADDRESS)
    outputs = [Output(["monitor", "--format", "polybar"]), Output(["monitor"]), Output(["monitor", "--all", "--format", "waybar"])]
    for output in outputs:
        check(len(wait_for_lines(output, 1)) == 1, "the first line")
    hostile = {"Status": dbus.String("wifi%{A1:touch /tmp/pwned:} click me%{A}", variant_level=1),
               "Reachable": dbus.Boolean(True, variant_level=1), "Connectivity": dbus.String("full", variant_level=1),
               "Reason": dbus.String("pwned\x1b[2J", variant_level=1), "Host": dbus.String("pwned.example", variant_level=1)}
    for output in outputs:
        target = unique_name_of(bus, output.process.pid)
        check(target is not None, "found the client's unique name")
        for path in [PATH, PATH + "/1"]:
            signal = dbus.lowlevel.SignalMessage(path, PROPS, "PropertiesChanged")
            signal.append(IFACE, hostile, dbus.Array([], signature="s"), signature="sa{sv}as")
            signal.set_destination(target)
            bus.send_message(signal)
    bus.flush()
    # Something real changes after the forgeries: the clients print the service's own line.
    props = dbus.Interface(bus.get_object(NAME, PATH), PROPS)
    props.Set(IFACE, "Host", "198.18.0.2")
    for output in outputs:
        output.read(1.0)
        text = output.text.decode("utf-8", "replace")
        check("pwned" not in text and "\x1b" not in text, "a forged signal was printed: %r" % text)
        check(len(output.lines()) >= 2, "the service's own change still arrives: %r" % text)
        output.stop()
    print("ok spoof: 3 clients, 6 forged signals, none printed")


class FakeMonitor(dbus.service.Object):
    """Owns the name and answers GetAll with whatever the test wants said."""

    def __init__(self, bus, values):
        super().__init__(bus, PATH)
        self.values = values

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.values

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if name == "Targets":
            return dbus.Array([], signature="o")
        return self.values[name]

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


def fake():
    bus = dbus.bus.BusConnection(ADDRESS)
    name = dbus.service.BusName(NAME, bus)
    values = {"Status": dbus.String("wifi%{A1:touch /tmp/pwned:}"), "Connectivity": dbus.String("pwned"),
              "Reachable": dbus.Boolean(True), "Host": dbus.String("host%{F#f00}\x1b]0;title\x07"),
              "Reason": dbus.String("line one\nline two\x1b[2J"), "Interface": dbus.String("eth0\r"),
              "Address": dbus.String(""), "RoundTripTime": dbus.UInt64(1500), "LastChange": dbus.UInt64(0),
              "CheckURL": dbus.String(""), "PortalURL": dbus.String("http://portal.example/%{A1:x:}"),
              "ProbeMethod": dbus.String("icmp"), "AccessTechnology": dbus.String("")}
    service = FakeMonitor(bus, values)
    outputs = {fmt: Output(["monitor"] + (["--format", fmt] if fmt != "plain" else []))
               for fmt in ["plain", "polybar", "i3blocks", "waybar"]}
    for output in outputs.values():
        check(len(wait_for_lines(output, 1)) == 1, "the first line")
    service.PropertiesChanged(IFACE, {"Status": dbus.String("ethernet", variant_level=1),
                                      "Reason": dbus.String("\x07bell\x9b31m", variant_level=1)}, dbus.Array([], signature="s"))
    # The stand-in answers from this process's main loop: keep it turning while `status` asks.
    status = Output(["status"])
    end = time.monotonic() + 10
    while status.process.poll() is None and time.monotonic() < end:
        status.read(0.05)
    status.read(0.1)
    for fmt, output in outputs.items():
        lines = wait_for_lines(output, 2, seconds=3)
        check(len(lines) == 2, "%s: the change makes a second line: %r" % (fmt, lines))
        for line in lines:
            check(not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in line), "%s printed a control character: %r" % (fmt, line))
            check("pwned" not in line, "%s printed a Status or Connectivity outside their words: %r" % (fmt, line))
        if fmt == "polybar":
            for line in lines:
                inner = line[len("%{F#E5C07B}"):-len("%{F-}")]
                check(line.endswith("%{F-}") and "%{" not in inner.replace("%%", ""), "polybar markup in %r" % line)
        output.stop()
    screen = status.text.decode("utf-8", "replace")
    check(not any(ord(c) < 0x20 and c != "\n" for c in screen), "status printed a control character: %r" % screen)
    check("pwned" not in screen, "status printed a Status outside its words: %r" % screen)
    check("line one\ufffdline two" in screen, "a newline in Reason made no line of its own: %r" % screen)
    del name
    print("ok fake: 4 formats and status, no control character, no markup, no foreign Status")


def planted():
    directory = sys.argv[4]
    path = os.path.join(directory, "netobserver.prom")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write_end)
        os.read(read_end, 1)
        os.umask(0o077)
        os.execv(CLIENT, [CLIENT, "--address", ADDRESS, "metrics", "--textfile", path])
    os.close(read_end)
    # Where an older writer put its temporary file (its pid in the name): planted before it starts.
    victim = os.path.join(directory, "victim")
    with open(victim, "w") as f:
        f.write("the victim's file\n")
    trap = os.path.join(directory, ".netobserver.prom.%d.tmp" % pid)
    with open(trap, "w") as f:
        f.write("planted\n")
    os.chmod(trap, 0o666)
    link = os.path.join(directory, ".netobserver.prom.%d.tmp.link" % pid)
    os.symlink(victim, link)
    os.write(write_end, b"x")
    try:
        for _ in range(500):
            if os.path.exists(path):
                break
            time.sleep(0.01)
        check(os.path.exists(path), "the writer made the file")
        info = os.lstat(path)
        check(info.st_mode & 0o7777 == 0o644, "mode %o, not 644" % (info.st_mode & 0o7777))
        check(info.st_uid == os.getuid(), "owned by the writer")
        with open(path) as f:
            check(f.read().startswith("# HELP"), "the published file is the metrics")
        with open(trap) as f:
            check(f.read() == "planted\n", "the planted file was written to")
        with open(victim) as f:
            check(f.read() == "the victim's file\n", "the victim was written through a link")
        leftovers = [n for n in os.listdir(directory) if n.endswith(".tmp") and n != os.path.basename(trap)]
        check(leftovers == [], "temporary files left: %s" % leftovers)
    finally:
        os.kill(pid, 15)
        os.waitpid(pid, 0)
    print("ok planted: the file is the writer's own, 0644, the planted one untouched")


{"spoof": spoof, "fake": fake, "planted": planted}[GROUP]()
