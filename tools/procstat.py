"""The daemon as /proc shows it, its blocking helper (`netobserverd --blocking-helper`, its child) with it:
the benches count the CPU and the wake-ups of both, since the helper does the daemon's blocking work."""
import os


def family(pid):
    """The daemon's PID, then its children's (the helper, when one runs)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [pid] + [int(child) for child in f.read().split()]
    except OSError:
        return [pid]


def _cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User and system CPU of the daemon and its helper."""
    return sum(_cpu(member) for member in family(pid))


def _scheduled(pid):
    total = 0
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0.0
    for task in tasks:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def scheduled_seconds(pid, with_helper=True):
    """CPU time of every thread, from the scheduler's own count in nanoseconds (cpu_seconds counts 10-ms ticks): the
    daemon's and its helper's, or one process's alone (with_helper=False: any program, such as fping)."""
    return sum(_scheduled(member) for member in (family(pid) if with_helper else [pid]))


def wakeups(pid, involuntary=False):
    """Context switches of every thread of the daemon and of its helper (voluntary ones: wake-ups after a sleep)."""
    keys = ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches") if involuntary else ("voluntary_ctxt_switches",)
    total = 0
    for member in family(pid):
        try:
            tasks = os.listdir("/proc/%d/task" % member)
        except OSError:
            continue
        for task in tasks:
            try:
                with open("/proc/%d/task/%s/status" % (member, task)) as f:
                    total += sum(int(line.split()[1]) for line in f if line.startswith(keys))
            except OSError:
                pass
    return total


def rollup(pid):
    """smaps_rollup's kB figures of one process, by name."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            return {line.split(":")[0]: int(line.split()[1]) for line in f if line.split()[-1:] == ["kB"]}
    except OSError:
        return {}


def helper_memory(pid):
    """'helper RSS N kB, private dirty M kB' for the daemon's helper, or that none runs."""
    helpers = family(pid)[1:]
    if not helpers:
        return "no helper running"
    figures = rollup(helpers[0])
    return "helper RSS %d kB, private dirty %d kB" % (figures.get("Rss", 0), figures.get("Private_Dirty", 0))


def loop_wakeups(pid):
    """Voluntary context switches of the daemon's own thread (its loop) alone."""
    try:
        with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
            return sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
    except OSError:
        return 0
