#!/usr/bin/env python3
"""What the search for statically linked CUDA runtimes (probe ``staticcuda``, fact ``python.static_cuda``) adds to
``envdoctor diagnose --format json`` on this machine, inspecting the interpreter that runs it (``--python``,
default this one: its venv's site-packages are what is searched).

Each run is a fresh process running the diagnose command in-process, alternating (pairs A B A B, the order
reversed every other round): A with the probe, B with it taken out of the probe registry (the check then has no
fact and says nothing). Printed: the medians of the whole process's CPU (user + system, getrusage) of A and B,
their difference and ratio, and the median CPU of the probe's own thread in A (``time.thread_time``: what it adds,
without the noise of the rest of the run), with what the probe found (candidates opened, libraries reported).
Nothing is asserted: the machine is shared and noisy.

    python scripts/bench_static_cuda.py --runs 15 [--python VENV/bin/python] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The child: the probe registry with or without the probe, the probe's thread CPU recorded, then the CLI; the
#: figures are written as it leaves (the launcher ends the process with os._exit).
CHILD = r"""
import json, os, resource, sys, time
sys.argv = ["envdoctor", "diagnose", "--format", "json"]
from envdoctor import probes
from envdoctor.probes import staticcuda
probes.all_probes()
spent = {}
if os.environ["BENCH_MODE"] == "without":
    del probes._REGISTRY["staticcuda"]
    probes._PRODUCERS.clear()
else:
    spec = probes._REGISTRY["staticcuda"]
    def timed(ctx, fn=spec.fn):
        start = time.thread_time()
        try:
            facts = list(fn(ctx))
        finally:
            spent["probe"] = time.thread_time() - start
        value = facts[0].value if facts else {}
        spent["libraries"] = len(value.get("libraries") or [])
        spent["complete"] = bool(value.get("complete"))
        return facts
    timed.__module__ = spec.fn.__module__  # the registry's probes are those of the probe modules
    probes._REGISTRY["staticcuda"] = spec._replace(fn=timed)
from envdoctor import launcher
leave = launcher._exit_now
def record(code):
    u = resource.getrusage(resource.RUSAGE_SELF)
    spent["cpu"] = u.ru_utime + u.ru_stime
    with open(os.environ["BENCH_OUT"], "w") as fh:
        json.dump(spent, fh)
    leave(code)
launcher._exit_now = record
launcher.main()
record(0)
"""


def one(python: str, mode: str) -> Dict[str, Any]:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        env = dict(os.environ, BENCH_MODE=mode, BENCH_OUT=out.name, NO_COLOR="1",
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([python, "-c", CHILD], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       cwd=tempfile.gettempdir(), timeout=300, check=False)
        text = out.read()
    if not text:
        raise SystemExit("the %s run wrote no figures: run the child by hand to see why" % mode)
    result: Dict[str, Any] = json.loads(text)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="runs of each (default 15)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs envdoctor (and is inspected)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    one(args.python, "with")  # warm the byte code and the page cache
    runs: Dict[str, List[Dict[str, Any]]] = {"with": [], "without": []}
    for i in range(args.runs):
        for mode in (("with", "without") if i % 2 == 0 else ("without", "with")):
            runs[mode].append(one(args.python, mode))
    cpu_a = statistics.median(r["cpu"] for r in runs["with"])
    cpu_b = statistics.median(r["cpu"] for r in runs["without"])
    probe = statistics.median(r["probe"] for r in runs["with"])
    figures = {"runs": args.runs, "cpu_with_ms": round(cpu_a * 1000, 1), "cpu_without_ms": round(cpu_b * 1000, 1),
               "difference_ms": round((cpu_a - cpu_b) * 1000, 1), "ratio": round(cpu_a / cpu_b, 4),
               "probe_thread_cpu_ms": round(probe * 1000, 2), "probe_share": round(probe / cpu_a, 4),
               "libraries": runs["with"][-1].get("libraries"), "complete": runs["with"][-1].get("complete"),
               "load": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print("diagnose CPU, median of %d: with the probe %.1f ms, without %.1f ms: %+.1f ms, ratio %.4f"
              % (args.runs, figures["cpu_with_ms"], figures["cpu_without_ms"], figures["difference_ms"],
                 figures["ratio"]))
        print("the probe's own thread: %.2f ms CPU (%.2f%% of the run); libraries reported: %s; complete: %s"
              % (figures["probe_thread_cpu_ms"], 100 * figures["probe_share"], figures["libraries"],
                 figures["complete"]))
        print("load average: %.2f" % figures["load"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
