#!/usr/bin/env python3
"""`envdoctor fleet` over many realistic 8-GPU reports, beside a bare `json.load` of the same files.

Writes N reports with scripts/make_fleet_reports.py (or uses --dir), then, alternating, in fresh
processes each time:

* ``json.load`` of every file, one after another, keeping nothing (the floor for any tool that
  reads them);
* ``envdoctor fleet DIR --format json`` (and with ``--policy``, when given).

Wall time is the median of the timed runs; memory is the peak of the whole process tree (fleet's
parallel readers included: every process alive at once, proportional set sizes added up), sampled
every 5 ms in separate runs.  Prints each figure and the ratios to json.load, and whether the
targets are met: at most 1.5x json.load's wall time and 150 MB (issue 16), and 1.5x its CPU seconds,
every process counted (issue 28).  By default at 3,000 and at 10,000 reports (the 3,000 are the first of
the 10,000, written once).  No assertion: machines are noisy; run it on a quiet one, and read the CPU
ratio, which the load of other work moves less than the wall time.

    python scripts/bench_fleet.py --runs 3                      # 3,000 and 10,000 reports
    python scripts/bench_fleet.py --count 10000 --runs 3
    python scripts/bench_fleet.py --dir /tmp/fleet --policy policy.toml --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_diagnose import _memory_kib, _tree  # noqa: E402  (one process-tree sampler for every bench)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TIME_TARGET, CPU_TARGET, MEMORY_TARGET_MB = 1.5, 1.5, 150.0

JSON_LOAD = """
import json, os, sys
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    if name.endswith(".json"):
        with open(os.path.join(d, name), "rb") as fh:
            json.load(fh)
"""


def timed(argv: Sequence[str]) -> Tuple[float, float]:
    """(wall seconds, CPU seconds of the process and every child it waited for: fleet's readers too)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    r = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode not in (0, 1):
        raise SystemExit("%s failed (%d): %s" % (" ".join(argv[:4]), r.returncode, r.stderr.decode()[-500:]))
    return wall, cpu


def peak_memory_mb(argv: Sequence[str]) -> float:
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(_memory_kib(p) for p in _tree(proc.pid)))
        time.sleep(0.005)
    return peak * 1024 / 1e6


def _env() -> Dict[str, str]:
    env = dict(os.environ, NO_COLOR="1")
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, action="append",
                    help="reports to write (repeatable; default 3000 and 10000)")
    ap.add_argument("--dir", help="use the reports already in this directory instead")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    ap.add_argument("--policy", help="also time `fleet --policy POLICY`")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()

    py = sys.executable
    if args.dir:
        bench(args, args.dir)
        return 0
    counts = sorted(set(args.count or [3000, 10000]))
    made = tempfile.mkdtemp(prefix="envdoctor-fleet-bench-")
    try:
        every = os.path.join(made, "all")
        subprocess.run([py, os.path.join(HERE, "make_fleet_reports.py"), str(counts[-1]), every], check=True,
                       stdout=subprocess.DEVNULL)
        names = sorted(n for n in os.listdir(every) if n.endswith(".json"))
        summaries = []
        for count in counts:
            directory = os.path.join(made, str(count))
            os.mkdir(directory)
            for name in names[:count]:  # the same reports, linked: written once
                os.link(os.path.join(every, name), os.path.join(directory, name))
            summaries.append(bench(args, directory))
        if args.json:
            print(json.dumps(summaries if len(summaries) > 1 else summaries[0], indent=2))
    finally:
        shutil.rmtree(made, ignore_errors=True)
    return 0


def bench(args: argparse.Namespace, directory: str) -> Dict[str, Any]:
    """Time json.load and fleet over the reports in ``directory``; print the figures unless --json."""
    py = sys.executable
    files = [n for n in os.listdir(directory) if n.endswith(".json")]
    total_mb = sum(os.path.getsize(os.path.join(directory, n)) for n in files) / 1e6
    tools: Dict[str, List[str]] = {
        "json.load": [py, "-c", JSON_LOAD, directory],
        "envdoctor fleet": [py, "-m", "envdoctor", "fleet", directory, "--format", "json"],
    }
    if args.policy:
        tools["envdoctor fleet --policy"] = tools["envdoctor fleet"] + ["--policy", args.policy]
    times: Dict[str, List[float]] = {k: [] for k in tools}
    cpus: Dict[str, List[float]] = {k: [] for k in tools}
    for argv in tools.values():  # warm the page cache and the byte-code once
        timed(argv)
    for _ in range(args.runs):
        for name, argv in tools.items():
            wall, cpu = timed(argv)
            times[name].append(wall)
            cpus[name].append(cpu)
    memory = {name: peak_memory_mb(argv) for name, argv in tools.items()}
    base = statistics.median(times["json.load"])
    base_cpu = statistics.median(cpus["json.load"])
    results: Dict[str, Dict[str, Any]] = {
        name: {"seconds": round(statistics.median(t), 3), "runs": [round(x, 3) for x in t],
               "ratio_to_json_load": round(statistics.median(t) / base, 2),
               "cpu_seconds": round(statistics.median(cpus[name]), 2),
               "cpu_ratio_to_json_load": round(statistics.median(cpus[name]) / base_cpu, 2),
               "peak_memory_mb": round(memory[name], 1)} for name, t in times.items()}
    with open("/proc/loadavg") as fh:
        load = fh.read().split()[0]
    summary: Dict[str, Any] = {"reports": len(files), "total_mb": round(total_mb, 1), "cpus": os.cpu_count(),
               "load_average_at_end": float(load), "results": results}
    for name in tools:
        if name != "json.load":
            r = results[name]
            r["time_target_met"] = r["ratio_to_json_load"] <= TIME_TARGET
            r["cpu_target_met"] = r["cpu_ratio_to_json_load"] <= CPU_TARGET
            r["memory_target_met"] = r["peak_memory_mb"] <= MEMORY_TARGET_MB
    if args.json and args.dir:
        print(json.dumps(summary, indent=2))
    elif not args.json:
        print("%d reports, %.0f MB, %s CPUs, median of %d runs (load average %s at the end: wall-time ratios "
              "are only meaningful on a quiet machine; CPU seconds count every process)" % (
                  len(files), total_mb, os.cpu_count(), args.runs, load))
        for name, r in results.items():
            extra = ""
            if name != "json.load":
                extra = "  cpu %s (<= %.1fx), time %s (<= %.1fx), memory %s (<= %.0f MB)" % (
                    "met" if r["cpu_target_met"] else "NOT met", CPU_TARGET,
                    "met" if r["time_target_met"] else "NOT met", TIME_TARGET,
                    "met" if r["memory_target_met"] else "NOT met", MEMORY_TARGET_MB)
            print("  %-26s %7.2f s  %5.2fx json.load  cpu %6.2f s (%4.2fx)  peak %6.1f MB%s" % (
                name, r["seconds"], r["ratio_to_json_load"], r["cpu_seconds"], r["cpu_ratio_to_json_load"],
                r["peak_memory_mb"], extra))
    return summary


if __name__ == "__main__":
    sys.exit(main())
