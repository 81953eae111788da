#!/usr/bin/env python3
"""What the topology layer costs `envdoctor diagnose` on an 8-GPU NVSwitch board: this tree against a
revision without the layer, same machine, same NVML, alternating runs.

There is no GPU here: NVML is the stand-in libnvidia-ml.so.1 of tests/fakenvml (compiled with the system C
compiler) answering for the 8x H100 NVSwitch board of tests/topology/boards/dgx-h100.json (NV18 between
every pair: 8 GPUs x 18 links, 28 pairs). Everything else is this machine, read live (its /sys has none of
the board's PCI addresses, so the sysfs part of the layer costs little here). Each run is a fresh
`python -m envdoctor diagnose --format json`; the medians and their ratio are printed, and the NVML query's
own time (the worker's, as the report's gpu probe waits for it) is shown apart.

    python scripts/bench_topology.py --runs 15
    python scripts/bench_topology.py --against 3628f46 --json

Target (issue 24): within 1.2x of the time without the layer. Printed as met / not met; no assertion (these
machines are noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from bench_diagnose import WORKDIR, copy_of_revision, with_path  # noqa: E402

from tests.fakenvml.build import build, fake_env, write_answers  # noqa: E402
from tests.topology import boards  # noqa: E402

TARGET = 1.2


def before_the_layer() -> str:
    """The revision just before the topology probe was added (the parent of the commit that added it)."""
    out = subprocess.run(["git", "-C", ROOT, "log", "--diff-filter=A", "--format=%H", "--",
                          "envdoctor/probes/topology.py"], capture_output=True, text=True, check=True).stdout.split()
    if not out:
        raise SystemExit("no commit adds envdoctor/probes/topology.py here: give --against")
    return out[-1] + "^"


def copy_of_this_tree() -> str:
    """This working tree's envdoctor laid out like copy_of_revision's (byte-compiled the same way: a tree
    run from source compiles every module on every run where no .pyc may be written)."""
    import atexit
    import compileall
    import shutil

    dest = tempfile.mkdtemp(prefix="envdoctor-bench-tree-")
    atexit.register(shutil.rmtree, dest, True)
    shutil.copytree(os.path.join(ROOT, "envdoctor"), os.path.join(dest, "envdoctor"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(ROOT, "recipes"), os.path.join(dest, "envdoctor", "recipes"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(dest, quiet=1)
    return dest


def run_once(argv: List[str], env: Dict[str, str]) -> Dict[str, float]:
    start = time.monotonic()
    r = subprocess.run(argv, capture_output=True, env=env, cwd=WORKDIR, timeout=120)
    wall = time.monotonic() - start
    doc = json.loads(r.stdout)
    if r.returncode not in (0, 1) or not doc.get("probes"):
        raise SystemExit("envdoctor did not produce a report: %s" % r.stderr.decode("utf-8", "replace")[-500:])
    timings = doc.get("timings", {})
    return {"wall": wall, "gpu_probe": float(timings.get("gpu", 0.0)),
            "topology_probe": float(timings.get("topology", 0.0))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11, help="runs per revision (default 11)")
    ap.add_argument("--against", metavar="GITREF", help="the revision without the layer (default: the parent of "
                                                       "the commit that added envdoctor/probes/topology.py)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    ref = args.against or before_the_layer()
    tmp = tempfile.mkdtemp(prefix="envdoctor-bench-topo-")
    lib = build(os.path.join(tmp, "lib"))
    answers = write_answers(boards.fake_answers(boards.load("dgx-h100")), os.path.join(tmp, "answers.txt"))
    env = fake_env(lib, answers, dict(os.environ, NO_COLOR="1"))
    py = sys.executable
    tools = {
        "this tree": ["env", "PYTHONPATH=" + with_path(copy_of_this_tree()), py, "-m", "envdoctor", "diagnose",
                      "--format", "json"],
        "without the layer (%s)" % ref: ["env", "PYTHONPATH=" + with_path(copy_of_revision(ref)), py, "-m",
                                         "envdoctor", "diagnose", "--format", "json"],
    }
    results: Dict[str, List[Dict[str, float]]] = {name: [] for name in tools}
    for argv in tools.values():  # warm the caches once
        run_once(argv, env)
    for _ in range(args.runs):
        for name, argv in tools.items():
            results[name].append(run_once(argv, env))
    summary = {}
    for name, rows in results.items():
        summary[name] = {k: statistics.median(r[k] for r in rows) for k in ("wall", "gpu_probe", "topology_probe")}
        summary[name]["runs"] = len(rows)
    names = list(tools)
    ratio = summary[names[0]]["wall"] / summary[names[1]]["wall"]
    if args.json:
        print(json.dumps({"revisions": summary, "ratio": round(ratio, 3), "target": TARGET,
                          "met": ratio <= TARGET}, indent=2))
        return 0
    for name in names:
        s = summary[name]
        print("%-40s wall %6.0f ms (median of %d); gpu probe %5.0f ms; topology probe %5.0f ms" % (
            name, s["wall"] * 1000, s["runs"], s["gpu_probe"] * 1000, s["topology_probe"] * 1000))
    print("\nratio %.2fx (target <= %.1fx): %s" % (ratio, TARGET, "met" if ratio <= TARGET else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
