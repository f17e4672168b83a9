#!/usr/bin/env python3
"""The D-Bus hot path against its goals: bench_targets.py MEMORY_LINE RAW_FILES...

Reads the reference harness's raw results (labels ref_libdbus and netobserverd, several
runs each, interleaved) and prints, for each goal of issue 9, the figure recorded when the
issue was filed, this run's libdbus and netobserverd medians, and whether the goal is met.
MEMORY_LINE is `rss_kb=N private_dirty_kb=N` for an idle netobserverd, read from smaps_rollup."""
import statistics
import sys
from collections import defaultdict

# Figures of the issue (2026-11-29, `make bench`, medians of 5 runs): what "before" means.
BEFORE = {
    "cpu": "9.9 µs (1.13–1.29×)",
    "throughput": "78–90 %",
    "signal": "225 µs",
    "startup": "25 ms",
    "rss": "8.6 MB",
    "dirty": "0.7 MB",
}


def runs(paths):
    data = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.startswith("#") or "scenario=" not in line:
                    continue
                fields = dict(t.split("=", 1) for t in line.split() if "=" in t)
                for key, value in fields.items():
                    try:
                        data[(fields.get("label"), fields["scenario"])][key].append(float(value))
                    except ValueError:
                        pass
    return data


def main():
    memory = dict(t.split("=") for t in sys.argv[1].split())
    data = runs(sys.argv[2:])

    def median(label, scenario, key):
        values = data[(label, scenario)].get(key, [])
        return statistics.median(values) if values else float("nan")

    c_cpu, n_cpu = median("ref_libdbus", "get_k64", "svc_cpu_us_per_call"), median("netobserverd", "get_k64", "svc_cpu_us_per_call")
    c_tput, n_tput = median("ref_libdbus", "get_k64", "calls_per_s"), median("netobserverd", "get_k64", "calls_per_s")
    c_sig, n_sig = median("ref_libdbus", "signal", "sig_p50_us"), median("netobserverd", "signal", "sig_p50_us")
    c_up, n_up = median("ref_libdbus", "process", "startup_ms"), median("netobserverd", "process", "startup_ms")
    c_rss, n_rss = median("ref_libdbus", "process", "rss_idle_kb"), median("netobserverd", "process", "rss_idle_kb")
    dirty = float(memory.get("private_dirty_kb", "nan"))
    rows = [
        ("service CPU per Get, K=64", BEFORE["cpu"], f"{c_cpu:.1f} µs", f"{n_cpu:.1f} µs ({n_cpu / c_cpu:.2f}×)",
         "≤ 1.0× C", n_cpu <= c_cpu),
        ("Get throughput, K=64", BEFORE["throughput"], f"{c_tput:,.0f}/s", f"{n_tput:,.0f}/s ({100 * n_tput / c_tput:.0f} %)",
         "≥ 95 % of C", n_tput >= 0.95 * c_tput),
        ("Set → StatusChanged p50", BEFORE["signal"], f"{c_sig:.0f} µs", f"{n_sig:.0f} µs", "≤ 160 µs", n_sig <= 160),
        ("start-up to name owned", BEFORE["startup"], f"{c_up:.1f} ms", f"{n_up:.1f} ms", "≤ 20 ms", n_up <= 20),
        ("idle RSS (static release)", BEFORE["rss"], f"{c_rss / 1024:.1f} MB", f"{n_rss / 1024:.1f} MB", "≤ 6 MB",
         n_rss <= 6 * 1024),
        ("private dirty memory, idle", BEFORE["dirty"], "—", f"{dirty / 1024:.2f} MB", "≤ 1 MB", dirty <= 1024),
    ]
    print("\n### Issue 9: the D-Bus hot path against C (medians of this run)\n")
    print("| metric | at the issue | C libdbus now | netobserverd now | goal | met |")
    print("|---|---|---|---|---|---|")
    for name, before, c, ours, goal, met in rows:
        print(f"| {name} | {before} | {c} | {ours} | {goal} | {'yes' if met else 'NO'} |")
    print()


if __name__ == "__main__":
    main()
