#!/usr/bin/env python3
"""How replaying a snapshot grows with the length of its search paths (issue 21).

A captured machine (tests/machines/ubuntu2204-a100-mig) is given N entries in LD_LIBRARY_PATH and in
PATH, in three shapes: directories the snapshot does not hold, one directory repeated N times, and
directories the snapshot lists, each holding the libraries and tools the probes look for (the most a
snapshot's 200,000-value limit allows). Each shape is replayed in-process (probes one after another,
then the checks and the text, JSON and markdown renderers) at N and 2N entries, and the ratio of the
times is printed: about 2 is linear, about 4 quadratic. No time limit is applied (the probes are timed,
not cut off) and nothing is asserted: these machines are noisy.

    python scripts/bench_replay.py              # N = 5,000, 10,000, 20,000
    python scripts/bench_replay.py --sizes 20000 40000 80000
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MACHINE = os.path.join(ROOT, "tests", "machines", "ubuntu2204-a100-mig", "snapshot.json")
#: Entries of a listed directory: what the driver, libraries and tools probes look for.
LIBS = ["libcudnn.so.9", "libcuda.so.1", "libnccl.so.2", "libcudart.so.12", "libnvidia-ml.so.1"]
TOOLS = ["nvcc", "python3", "gcc", "docker"]


def stretched(doc: Dict[str, Any], n: int, shape: str) -> Dict[str, Any]:
    out = copy.deepcopy(doc)
    env = out.setdefault("environ", {})
    if shape == "repeated":
        env["LD_LIBRARY_PATH"] = ":".join(["/usr/lib/x86_64-linux-gnu"] * n)
        env["PATH"] = ":".join(["/usr/bin"] * n)
        return out
    env["LD_LIBRARY_PATH"] = ":".join("/opt/l%d" % i for i in range(n))
    env["PATH"] = ":".join("/opt/b%d" % i for i in range(n))
    if shape == "listed":
        for i in range(n):
            out["dirs"]["/opt/l%d" % i] = {"entries": list(LIBS)}
            out["dirs"]["/opt/b%d" % i] = {"entries": list(TOOLS)}
    return out


def replay_seconds(doc: Dict[str, Any]) -> float:
    from envdoctor.host.snapshot import SnapshotHost
    from envdoctor.jsontext import dumps
    from envdoctor.probes import run_probes
    from envdoctor.render.markdown import render as markdown
    from envdoctor.render.style import Style
    from envdoctor.render.text import render
    from envdoctor.report import judge

    start = time.monotonic()
    host = SnapshotHost(doc, "bench")
    report = judge(run_probes(host, parallel=False), {"kind": "snapshot", "description": "bench"}, start)
    render(report, Style(None, False), verbose=True, width=80)
    dumps(report.to_dict())
    markdown(report)
    return time.monotonic() - start


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 20000])
    parser.add_argument("--shapes", nargs="+", default=["absent", "repeated", "listed"])
    args = parser.parse_args(argv)
    with open(MACHINE, encoding="utf-8") as fh:
        doc = json.load(fh)
    print("load average: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    replay_seconds(stretched(doc, 10, "absent"))  # imports and first-use costs, outside the figures
    for shape in args.shapes:
        # a listed directory costs values: 8,000 of each kind is about what the 200,000-value limit allows
        sizes = [2000, 4000, 8000] if shape == "listed" else args.sizes
        times = [(n, replay_seconds(stretched(doc, n, shape))) for n in sizes]
        cells = ["%d: %.2fs" % (n, t) for n, t in times]
        ratios = ["x%.2f" % (b[1] / a[1]) for a, b in zip(times, times[1:]) if a[1] > 0]
        print("%-9s %s   ratio per doubling: %s" % (shape, ", ".join(cells), " ".join(ratios)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
