"""Hostile callers, one group per run: hostile.py ADDRESS DAEMON_PID GROUP [SEED].

Each group acts as a local attacker would and checks INTERFACE.md's "Hostile
callers" numbers that are not timings; timings are printed as `measured ...`
lines for the test log and the closing note, never asserted."""
import os
import pwd
import random
import sys
import time

import dbus
import dbus.lowlevel

from common import *

ADDRESS, PID, GROUP = sys.argv[1], int(sys.argv[2]), sys.argv[3]
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else random.randrange(1 << 30)
PEER = "org.freedesktop.DBus.Peer"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"


def open_fds():
    return len(os.listdir("/proc/%d/fd" % PID))


def settled_fds():
    # The daemon's one-shot sockets (a neighbour check, the probe past the gateway: at most a second or so each)
    # come and go on their own: count once the number has held for 1.5 s, so only what calls left open counts.
    last, held = open_fds(), 0
    for _ in range(100):
        time.sleep(0.1)
        now = open_fds()
        held = held + 1 if now == last else 0
        last = now
        if held >= 15:
            break
    return last


def status_kb(field):
    with open("/proc/%d/status" % PID) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def own_kb():
    """The memory the daemon holds of its own: RssAnon + RssShmem. VmRSS also counts the file pages of code and
    constants, which the daemon lets go after start-up and which come back from the file as code runs again."""
    return status_kb("RssAnon") + status_kb("RssShmem")


def cpu_ms():
    """The daemon's CPU time so far (user and system), in ms: what a call cost it, however busy the machine is."""
    with open("/proc/%d/stat" % PID) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def call(bus, path, interface, member, signature="", args=(), no_reply=False):
    msg = dbus.lowlevel.MethodCallMessage(NAME, path, interface, member)
    if signature:
        msg.append(*args, signature=signature)
    if no_reply:
        msg.set_no_reply(True)
    return msg


def blocking(bus, msg, timeout=10.0):
    """The reply's arguments, or the error's name."""
    try:
        return bus.send_message_with_reply_and_block(msg, timeout).get_args_list()
    except dbus.DBusException as e:
        return e.get_dbus_name()


def ping_latency_during(bus, action):
    """Runs `action` (which sends without waiting), then times a Ping behind it: how long the loop was busy."""
    start = time.monotonic()
    action()
    blocking(bus, call(bus, PATH, PEER, "Ping"))
    return (time.monotonic() - start) * 1000


class Replies:
    """Counts every reply and error this connection receives, by the serial it answers."""

    def __init__(self, bus):
        self.by_serial = {}
        bus.add_message_filter(self.filter)

    def filter(self, bus, msg):
        if msg.get_type() in (2, 3):  # method return, error
            self.by_serial.setdefault(msg.get_reply_serial(), []).append(msg)
        return None


def oversized():
    bus, _ = connect(ADDRESS)
    for size in (4 << 20, 30 << 20):
        hwm_before, rss_before = status_kb("VmHWM"), own_kb()
        payload = dbus.ByteArray(b"\xa5" * size)
        result = []
        took = ping_latency_during(bus, lambda: result.append(
            blocking(bus, call(bus, PATH, INTROSPECTABLE, "Introspect", "ay", [payload]), timeout=60)))
        check(result == [ERR + "InvalidArgs"], "%d-byte Introspect argument: %s" % (size, result))
        for target in [(PATH, PROPS, "Get", "ay"), (PATH, IFACE, "Wait", "ay"), ("/", PEER, "Ping", "ay")]:
            got = blocking(bus, call(bus, target[0], target[1], target[2], target[3], [payload]), timeout=60)
            check(got == ERR + "InvalidArgs", "%s.%s with %d bytes: %s" % (target[1], target[2], size, got))
        # A Set whose variant holds the whole payload: refused before it is decoded.
        got = blocking(bus, call(bus, PATH, PROPS, "Set", "ssv", [IFACE, "Host", dbus.ByteArray(b"x" * size, variant_level=1)]),
                       timeout=60)
        check(got == ERR + "InvalidArgs", "Set Host to a %d-byte ay: %s" % (size, got))
        time.sleep(0.2)
        hwm_after, rss_after = status_kb("VmHWM"), own_kb()
        growth = hwm_after - hwm_before
        print("measured oversized %d MiB: a Ping queued behind it answered after %.1f ms, peak +%d kB, own memory %d -> %d kB" %
              (size >> 20, took, growth, rss_before, rss_after))
        # libdbus holds what it received (its read buffer grows by doubling, plus the
        # message's own copy); nothing of ours may add a copy, let alone decode it.
        check(growth <= 3 * size // 1024 + 4096, "peak RSS grew %d kB for a %d-byte call" % (growth, size))
        check(rss_after - rss_before <= 2048, "own memory %d -> %d kB after a %d-byte call" % (rss_before, rss_after, size))
    check(blocking(bus, call(bus, PATH, PROPS, "Get", "ss", [IFACE, "Host"])) == ["198.18.0.1"], "still serving")
    print("ok oversized")


def descriptors():
    bus, _ = connect(ADDRESS)
    before = settled_fds()
    r, w = os.pipe()
    targets = [(PATH, PROPS, "Get", "ssh", [IFACE, "Status"]), (PATH, IFACE, "Wait", "uh", [dbus.UInt32(100)]),
               (PATH, IFACE, "Check", "h", []), (PATH, INTROSPECTABLE, "Introspect", "h", []),
               ("/", PEER, "Ping", "h", []), (PATH, IFACE, "NoSuchMethod", "hh", [dbus.types.UnixFd(r)]),
               (PATH, PROPS, "Set", "ssv", [IFACE, "Host"])]
    for i in range(1000):
        path, interface, member, signature, args = targets[i % len(targets)]
        if member == "Set":
            args = args + [dbus.types.UnixFd(w, variant_level=1)]
        else:
            args = args + [dbus.types.UnixFd(r if i % 2 else w)]
        got = blocking(bus, call(bus, path, interface, member, signature, args))
        check(got == ERR + "InvalidArgs", "%s.%s with a descriptor: %s" % (interface, member, got))
    # NO_REPLY calls carrying descriptors: no answer, descriptors closed all the same.
    for i in range(500):
        bus.send_message(call(bus, PATH, IFACE, "Wait", "uh", [dbus.UInt32(60000), dbus.types.UnixFd(r)], no_reply=True))
    blocking(bus, call(bus, PATH, PEER, "Ping"))
    after = settled_fds()
    check(after == before, "open descriptors %d before, %d after 1,500 calls carrying descriptors" % (before, after))
    os.close(r)
    os.close(w)
    print("ok descriptors %d -> %d" % (before, after))


def no_reply():
    bus, _ = connect(ADDRESS)
    replies = Replies(bus)
    silent = set()
    kinds = [(PATH, PEER, "Ping", "", []), ("/anywhere", PEER, "Ping", "", []), (PATH, PEER, "GetMachineId", "", []),
             (PATH, PEER, "Ping", "s", ["x"]), (PATH, PROPS, "Get", "ss", [IFACE, "Status"]),
             (PATH, PROPS, "Get", "ss", [IFACE, "Nope"]), (PATH, PROPS, "GetAll", "s", [IFACE]),
             (PATH, PROPS, "Set", "ssv", [IFACE, "Status", dbus.String("x", variant_level=1)]),
             (PATH, PROPS, "Set", "ssv", [IFACE, "Interval", dbus.String("x", variant_level=1)]),
             (PATH, INTROSPECTABLE, "Introspect", "", []), ("/nowhere", INTROSPECTABLE, "Introspect", "", []),
             (PATH, IFACE, "Check", "", []), (PATH, IFACE, "Wait", "u", [dbus.UInt32(600000)]),
             (PATH, IFACE, "Wait", "u", [dbus.UInt32(4000000)]), (PATH, IFACE, "Wait", "s", ["x"]),
             (PATH, IFACE, "Nope", "", []), (PATH, "org.nowhere", "Nope", "", [])]
    for i in range(2000):
        path, interface, member, signature, args = kinds[i % len(kinds)]
        silent.add(bus.send_message(call(bus, path, interface, member, signature, args, no_reply=True)))
    # NO_REPLY Waits keep nothing pending: this client still has all 64 Wait slots.
    pending = []
    for _ in range(64):
        pending.append(bus.send_message(call(bus, PATH, IFACE, "Wait", "u", [dbus.UInt32(600000)])))
    check(blocking(bus, call(bus, PATH, PEER, "Ping")) == [], "Ping answered")
    pump(0.3)
    stray = [s for s in silent if s in replies.by_serial]
    check(stray == [], "%d of 2,000 NO_REPLY calls were answered, e.g. %s" %
          (len(stray), [replies.by_serial[s][0].get_error_name() for s in stray[:3]]))
    refused = [s for s in pending if s in replies.by_serial]
    check(refused == [], "64 Waits after 2,000 NO_REPLY calls: %d answered at once (%s)" %
          (len(refused), [replies.by_serial[s][0].get_error_name() for s in refused[:2]]))
    check(blocking(bus, call(bus, PATH, IFACE, "Wait", "u", [dbus.UInt32(1000)])) == ERR + "LimitsExceeded",
          "the 65th Wait is refused")
    print("ok no reply")


def arguments():
    bus, _ = connect(ADDRESS)
    for path in [PATH, "/", "/nowhere/at/all"]:
        check(blocking(bus, call(bus, path, PEER, "Ping")) == [], "Ping at %s" % path)
    check(len(blocking(bus, call(bus, PATH, PEER, "GetMachineId"))[0]) == 32, "GetMachineId")
    for member, signature, args in [("Ping", "s", ["x"]), ("Ping", "u", [dbus.UInt32(1)]), ("GetMachineId", "s", ["x"]),
                                    ("GetMachineId", "ay", [dbus.ByteArray(b"xx")])]:
        got = blocking(bus, call(bus, PATH, PEER, member, signature, args))
        check(got == ERR + "InvalidArgs", "Peer.%s(%s): %s" % (member, signature, got))
    nested = dbus.String("198.18.0.9", variant_level=2)
    check(blocking(bus, call(bus, PATH, PROPS, "Set", "ssv", [IFACE, "Host", nested])) == ERR + "InvalidArgs",
          "a Set whose variant holds a variant")
    for value in [dbus.Array(["198.18.0.9"], signature="s", variant_level=1), dbus.UInt32(5, variant_level=1),
                  dbus.Struct(("198.18.0.9",), variant_level=1)]:
        check(blocking(bus, call(bus, PATH, PROPS, "Set", "ssv", [IFACE, "Host", value])) == ERR + "InvalidArgs",
              "Set Host to %r" % (value,))
    check(blocking(bus, call(bus, PATH, PROPS, "Get", "ss", [IFACE, "Host"])) == ["198.18.0.1"], "Host unchanged")
    for member, signature, args in [("Get", "s", [IFACE]), ("Get", "sss", [IFACE, "Host", "x"]), ("GetAll", "", []),
                                    ("Set", "ss", [IFACE, "Host"]), ("Get", "ay", [dbus.ByteArray(b"")])]:
        got = blocking(bus, call(bus, PATH, PROPS, member, signature, args))
        check(got == ERR + "InvalidArgs", "Properties.%s(%s): %s" % (member, signature, got))
    print("ok arguments")


def pending_cap():
    clients = []
    rss_before = own_kb()
    for i in range(70):
        bus, _ = connect(ADDRESS)
        replies = Replies(bus)
        serials = [bus.send_message(call(bus, PATH, IFACE, "Wait", "u", [dbus.UInt32(600000)])) for _ in range(64)]
        blocking(bus, call(bus, PATH, PEER, "Ping"))
        clients.append((bus, replies, serials))
    pump(1.0)
    accepted, refused = 0, 0
    for bus, replies, serials in clients:
        answered = [s for s in serials if s in replies.by_serial]
        for s in answered:
            check(replies.by_serial[s][0].get_error_name() == ERR + "LimitsExceeded",
                  "an early answer to a pending Wait is LimitsExceeded")
        refused += len(answered)
        accepted += len(serials) - len(answered)
    clients = [bus for bus, _, _ in clients]
    rss_full = own_kb()
    check(accepted == 4096, "4,096 Waits pending in all, not %d (%d refused)" % (accepted, refused))
    check(blocking(clients[0], call(clients[0], PATH, IFACE, "Check")) == ERR + "LimitsExceeded",
          "a Check when the service is full")
    for bus in clients:
        bus.close()
    time.sleep(1.0)
    # Every slot is free again: a new client gets a Wait.
    bus, _ = connect(ADDRESS)
    check(blocking(bus, call(bus, PATH, IFACE, "Wait", "u", [dbus.UInt32(10)])) == [False], "a Wait after the clients left")
    rss_after = own_kb()
    print("measured pending cap: RSS %d kB, %d kB with 4,096 pending Waits, %d kB after their clients left" %
          (rss_before, rss_full, rss_after))
    print("ok pending cap")


def random_value(rng, depth=0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0: return dbus.String("".join(rng.choice("abc.-_/ \u00e9") for _ in range(rng.randrange(40))))
    if kind == 1: return dbus.UInt32(rng.randrange(1 << 32))
    if kind == 2: return dbus.Int64(rng.randrange(-(1 << 63), 1 << 63))
    if kind == 3: return dbus.Boolean(rng.randrange(2))
    if kind == 4: return dbus.Double(rng.random() * 1e9)
    if kind == 5: return dbus.ByteArray(bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 100, 4096]))))
    if kind == 6: return dbus.Array([random_value(rng, depth + 1) for _ in range(rng.randrange(4))], signature="v")
    if kind == 7: return dbus.Dictionary({"k%d" % i: random_value(rng, depth + 1) for i in range(rng.randrange(4))},
                                         signature="sv")
    return dbus.Struct((random_value(rng, depth + 1), random_value(rng, depth + 1)), variant_level=1)


def random_calls():
    rng = random.Random(SEED)
    print("seed %d" % SEED)
    fds_before, rss_before = settled_fds(), own_kb()
    r, w = os.pipe()
    paths = [PATH, "/", "/org", "/org/netobserver", "/org/netobserver/Monitor/1", "/x"]
    interfaces = [IFACE, PROPS, PEER, INTROSPECTABLE, "org.netobserver.Nope", None]
    members = ["Get", "GetAll", "Set", "Ping", "GetMachineId", "Introspect", "Check", "Wait", "StatusChanged", "X"]
    properties = ["Status", "Host", "Interval", "Timeout", "FailureThreshold", "RecoveryThreshold", "AddressFamily",
                  "RoundTripTime", "Nope", ""]
    bus, _ = connect(ADDRESS)
    replies = Replies(bus)
    silent = set()
    sent = 0
    for i in range(10000):
        msg = dbus.lowlevel.MethodCallMessage(NAME, rng.choice(paths), rng.choice(interfaces), rng.choice(members))
        args = []
        shape = rng.randrange(6)
        if shape == 0:
            args = [(dbus.String(rng.choice([IFACE, PROPS, "", "x"])), "s"), (dbus.String(rng.choice(properties)), "s")]
        elif shape == 1:
            args = [(dbus.UInt32(rng.choice([0, 1, 50, 3600000, 3600001, 1 << 31])), "u")]
        elif shape == 2:
            args = [(dbus.String(IFACE), "s"), (dbus.String(rng.choice(properties)), "s"),
                    (random_value(rng), "v")]
        elif shape == 3:
            args = [(random_value(rng), "v") for _ in range(rng.randrange(1, 4))]
        elif shape == 4:
            args = [(dbus.types.UnixFd(rng.choice([r, w])), "h")]
        if rng.randrange(200) == 0:
            args.append((dbus.ByteArray(b"\0" * (1 << 20)), "ay"))
        for value, signature in args:
            msg.append(value, signature=signature)
        if rng.randrange(3) == 0:
            msg.set_no_reply(True)
        serial = bus.send_message(msg)
        if msg.get_no_reply():
            silent.add(serial)
        sent += 1
        if i % 500 == 499:
            blocking(bus, call(bus, PATH, PEER, "Ping"))
    blocking(bus, call(bus, PATH, PEER, "Ping"))
    pump(0.3)
    stray = [s for s in silent if s in replies.by_serial]
    check(stray == [], "seed %d: %d NO_REPLY calls answered" % (SEED, len(stray)))
    check(blocking(bus, call(bus, PATH, PROPS, "Get", "ss", [IFACE, "Status"]))[0] in ("none", "unknown"), "still serving")
    bus.close()
    os.close(r)
    os.close(w)
    time.sleep(0.5)
    fds_after, rss_after = settled_fds(), own_kb()
    check(fds_after == fds_before, "seed %d: descriptors %d before, %d after" % (SEED, fds_before, fds_after))
    check(rss_after - rss_before <= 2048, "seed %d: own memory %d -> %d kB" % (SEED, rss_before, rss_after))
    print("measured random calls: %d sent, %d without reply, own memory %d -> %d kB, descriptors %d -> %d" %
          (sent, len(silent), rss_before, rss_after, fds_before, fds_after))
    print("ok random calls")


def huge_names():
    """Names a caller sends come back cut: a 30 MiB property name costs what a short one does."""
    bus, _ = connect(ADDRESS)
    # A 4 MiB Host is refused before anything splits it (it once took the service to 147 MiB).
    for host in ("1." * (2 << 20) + "1", "a" * (4 << 20)):
        hwm_before = status_kb("VmHWM")
        got = blocking(bus, call(bus, PATH, PROPS, "Set", "ssv", [IFACE, "Host", dbus.String(host, variant_level=1)]),
                       timeout=60)
        check(got == ERR + "InvalidArgs", "a %d-byte Host: %s" % (len(host), got))
        growth = status_kb("VmHWM") - hwm_before
        print("measured %d-byte Host: peak +%d kB" % (len(host), growth))
        check(growth <= 4 * len(host) // 1024 + 4096, "peak RSS grew %d kB for a %d-byte Host" % (growth, len(host)))
    for size in (1 << 20, 30 << 20):
        name = "P" * size
        hwm_before, rss_before = status_kb("VmHWM"), own_kb()
        for msg in [call(bus, PATH, PROPS, "Get", "ss", [IFACE, name]), call(bus, PATH, PROPS, "Get", "ss", [name, "Status"]),
                    call(bus, PATH, PROPS, "GetAll", "s", [name]),
                    call(bus, PATH, PROPS, "Set", "ssv", [IFACE, name, dbus.String("x", variant_level=1)]),
                    call(bus, "/" + "p" * size, IFACE, "Check")]:
            start = time.monotonic()
            try:
                bus.send_message_with_reply_and_block(msg, 60)
                check(False, "a call naming a %d-byte name succeeded" % size)
            except dbus.DBusException as e:
                took = (time.monotonic() - start) * 1000
                text = e.get_dbus_message() or ""
                check(len(text.encode()) <= 1024, "%s quotes %d bytes of a %d-byte name" % (e.get_dbus_name(), len(text.encode()), size))
                check(e.get_dbus_name() in (ERR + "UnknownProperty", ERR + "UnknownInterface", ERR + "UnknownObject",
                                            ERR + "InvalidArgs"), "%s for a %d-byte name" % (e.get_dbus_name(), size))
        time.sleep(0.2)
        hwm_after, rss_after = status_kb("VmHWM"), own_kb()
        print("measured huge names %d MiB: peak +%d kB (%d -> %d), own memory %d -> %d kB, last call %.1f ms" %
              (size >> 20, hwm_after - hwm_before, hwm_before, hwm_after, rss_before, rss_after, took))
        # libdbus holds the message it received (its read buffer and the message); nothing of ours copies it.
        check(hwm_after - hwm_before <= 3 * size // 1024 + 4096, "peak RSS grew %d kB for %d-byte names" %
              (hwm_after - hwm_before, size))
        check(rss_after - rss_before <= 2048, "own memory %d -> %d kB" % (rss_before, rss_after))
    check(blocking(bus, call(bus, PATH, PROPS, "Get", "ss", [IFACE, "Host"])) == ["198.18.0.1"], "Host unchanged")
    print("ok huge names")


def huge_paths():
    """A path of tens of MiB costs what a same-size argument does, in many components or one: nothing splits it
    (libdbus's object tree split it into a string per component: 123-146 ms of the loop per call)."""
    bus, _ = connect(ADDRESS)
    size = 30 << 20

    def cost(msg):
        before = cpu_ms()
        got = blocking(bus, msg, timeout=60)
        time.sleep(0.2)
        return cpu_ms() - before, got

    base = min(cost(call(bus, PATH, PROPS, "Get", "ss", [IFACE, "P" * size]))[0] for _ in range(2))
    for path, shape in (("/p" * (size // 2), "many components"), ("/" + "p" * size, "one component")):
        for interface, member in ((INTROSPECTABLE, "Introspect"), (IFACE, "Check"), (None, "Check")):
            # The least of two tries, as for the base: a split costs ten times every time, while the daemon's own
            # start-up work or a busy CI machine can land on any single call.
            tries = [cost(call(bus, path, interface, member)) for _ in range(2)]
            spent, got = min(t[0] for t in tries), tries[-1][1]
            check(tries[0][1] == got, "%s at a huge path answered %s, then %s" % (member, tries[0][1], got))
            print("measured %d MiB path in %s, %s: %.0f ms of the daemon's CPU (a same-size argument: %.0f ms)" %
                  (size >> 20, shape, member, spent, base))
            check(got == ERR + "UnknownObject", "%s at a huge path: %s" % (member, got))
            # Receiving and validating 30 MiB is most of either cost; splitting the path cost ten times that.
            check(spent <= 2 * base + 100, "a %d MiB path in %s cost %.0f ms of CPU, a same-size argument %.0f ms" %
                  (size >> 20, shape, spent, base))
    check(blocking(bus, call(bus, PATH, PEER, "Ping")) == [], "still answering")
    print("ok huge paths")


def check_url_inward():
    """A CheckURL into this machine is refused over D-Bus, whatever form its address takes."""
    bus, _ = connect(ADDRESS)
    for url in ["http://127.0.0.1/", "http://0x7f000001/generate_204", "http://[::1]:8080/", "http://169.254.169.254/latest",
                "http://0.0.0.0/", "http://224.0.0.1/", "http://[::ffff:127.0.0.1]/", "http://[fe80::1]/"]:
        got = blocking(bus, call(bus, PATH, PROPS, "Set", "ssv", [IFACE, "CheckURL", dbus.String(url, variant_level=1)]))
        check(got == ERR + "InvalidArgs", "Set CheckURL %s: %s" % (url, got))
    check(blocking(bus, call(bus, PATH, PROPS, "Get", "ss", [IFACE, "CheckURL"])) == [""], "CheckURL unchanged")
    print("ok check url inward")


def as_user(uid, connections, waits):
    """In a child running as `uid`: `connections` connections × `waits` Waits; prints how many were refused."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        buses, refused = [], 0
        for _ in range(connections):
            bus = dbus.bus.BusConnection(ADDRESS)
            replies = Replies(bus)
            serials = [bus.send_message(call(bus, PATH, IFACE, "Wait", "u", [dbus.UInt32(600000)])) for _ in range(waits)]
            blocking(bus, call(bus, PATH, PEER, "Ping"))
            buses.append((bus, replies, serials))
        pump(1.0)
        for bus, replies, serials in buses:
            refused += sum(1 for s in serials if s in replies.by_serial and
                           replies.by_serial[s][0].get_error_name() == ERR + "LimitsExceeded")
        os.write(write_end, b"%d\n" % refused)
        os.close(write_end)
        time.sleep(30)  # holds its Waits until killed
        os._exit(0)
    os.close(write_end)
    refused = int(os.fdopen(read_end).readline())
    return pid, refused


def per_user():
    """One uid cannot take every pending call: 1,024 per user, 256 kept for root (the uid asked of the bus)."""
    if os.geteuid() != 0:
        print("skip: needs root to act as other users")
        return
    nobody, refused = as_user(65534, 17, 64)
    check(refused == 64, "uid 65534 with 17 × 64 Waits: %d refused, not 64" % refused)
    other_uid = pwd.getpwnam("daemon").pw_uid
    other, refused_other = as_user(other_uid, 2, 64)
    check(refused_other == 0, "another user still waits: %d refused" % refused_other)
    bus, _ = connect(ADDRESS)
    replies = Replies(bus)
    serials = [bus.send_message(call(bus, PATH, IFACE, "Wait", "u", [dbus.UInt32(600000)])) for _ in range(64)]
    blocking(bus, call(bus, PATH, PEER, "Ping"))
    pump(0.3)
    check(not any(s in replies.by_serial for s in serials), "root's 64 Waits are pending")
    for pid in (nobody, other):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    print("measured per user: uid 65534 held 1,024 Waits, 64 refused; user daemon and root still waited")
    print("ok per user")


{"per_user": per_user, "huge_names": huge_names, "huge_paths": huge_paths, "check_url_inward": check_url_inward, "oversized": oversized, "descriptors": descriptors, "no_reply": no_reply, "arguments": arguments,
 "pending_cap": pending_cap, "random": random_calls}[GROUP]()
