#!/usr/bin/env python3
"""What install's pre-flight costs in probing: ``envdoctor install pytorch --dry-run`` on this machine, this
checkout against envdoctor as of other git revisions, run in turns by the same interpreter.

    python scripts/bench_install.py                    # against 9d8f98f^ (before) and main
    python scripts/bench_install.py --runs 15 --against main --against 9d8f98f^

9d8f98f is the commit from which the pytorch recipe names the facts its plans provide (``PROVIDES``), so that
``install pytorch`` probes what the pre-flight's checks read (``envdoctor.preflight.probes_for``) besides the
planning probes (os, driver, gpu, python); before it, only those. Each copy is laid out like an install and
byte-compiled (``bench_diagnose.installed_copy``/``copy_of_revision``); each run is a fresh process; the CPU
counts every process it waited for. Printed: the median wall and CPU seconds of each, and their ratios to the
first revision. No figure here is asserted anywhere: it is for reading.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_diagnose import copy_of_revision, installed_copy, load_average, measure, with_path  # noqa: E402

#: The command measured: a dry run plans and judges, nothing is installed.
COMMAND = ["install", "pytorch", "--dry-run"]
BEFORE = "9d8f98f^"


def probes_of_this_checkout() -> List[str]:
    """The probes ``install pytorch`` runs here: the planning ones and the pre-flight's."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from envdoctor import preflight
    from envdoctor.recipes import load_recipe
    from envdoctor.target import PLANNING_PROBES

    extra = preflight.probes_for(load_recipe("pytorch").PROVIDES)
    return list(PLANNING_PROBES) + [p for p in extra if p not in PLANNING_PROBES]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="runs of each copy, taken in turns (default 9)")
    ap.add_argument("--against", action="append", metavar="GITREF",
                    help="a revision to compare with (repeatable; default: %s and main)" % BEFORE)
    args = ap.parse_args()
    refs = args.against or [BEFORE, "main"]
    copies: Dict[str, str] = {ref: copy_of_revision(ref) for ref in refs}
    copies["this checkout"] = installed_copy()
    times: Dict[str, List[Tuple[float, float]]] = {name: [] for name in copies}
    exits: Dict[str, set] = {name: set() for name in copies}
    load = [load_average()]
    for _ in range(args.runs):
        for name, copy in copies.items():
            env = {"PYTHONPATH": with_path(copy)}
            wall, _rss, code, cpu = measure([sys.executable, "-m", "envdoctor"] + COMMAND, env)
            times[name].append((wall, cpu))
            exits[name].add(code)
    load.append(load_average())
    print("envdoctor %s on this machine, %d runs each in turns (load average %.1f / %.1f)" % (
        " ".join(COMMAND), args.runs, load[0], load[1]))
    print("probes it runs here: " + ", ".join(probes_of_this_checkout()))
    first = refs[0]
    base_wall = statistics.median(w for w, _ in times[first])
    base_cpu = statistics.median(c for _, c in times[first])
    for name in copies:
        wall = statistics.median(w for w, _ in times[name])
        cpu = statistics.median(c for _, c in times[name])
        print("  %-16s wall %6.0f ms (%.2fx)   CPU %6.0f ms (%.2fx)   exit %s" % (
            name, wall * 1000, wall / base_wall, cpu * 1000, cpu / base_cpu, ",".join(map(str, sorted(exits[name])))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
