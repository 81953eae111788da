#!/usr/bin/env python3
"""How often does a starved machine pass for a hung driver?  Run N healthy `envdoctor diagnose` at
once against the fake libnvidia-ml.so.1 (tests/fakenvml, healthy H100 answers), so the machine is
far more loaded than its cores, and count the reports that blame the driver (driver.nvml_hung).

    python scripts/bench_parallel_nvml.py [--runs 100] [--timeout 2] [--real]

With ``--real`` the runs ask the machine's own driver (a GPU machine) instead of the fake library.

Prints the counts and ratios; a healthy driver should never be called hung (0 driver.nvml_hung).
Runs that could not finish NVML in time because of the load say so (status "starved", the GPU layer
unverified), which is honest: the node was not seen.  Needs a C compiler.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.fakenvml.build import build, fake_env, load_answers, write_answers  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--real", action="store_true", help="ask this machine's NVIDIA driver, not the fake library")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if opts.real:
            env = dict(os.environ)
        else:
            lib = build(os.path.join(tmp, "lib"))
            answers = write_answers(load_answers("h100.json"), os.path.join(tmp, "answers.txt"))
            env = fake_env(lib, answers)
        start = time.monotonic()
        procs = [subprocess.Popen([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json", "--timeout",
                                   str(opts.timeout)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL) for _ in range(opts.runs)]
        outs = [p.communicate()[0] for p in procs]
        wall = time.monotonic() - start
    hung = starved = unverified = nvml_ok = bad = 0
    statuses: Counter = Counter()
    messages: Counter = Counter()
    for out in outs:
        try:
            doc = json.loads(out)
        except ValueError:
            bad += 1
            continue
        codes = {f["code"] for f in doc["findings"]}
        facts = {f["key"]: f for p in doc["probes"] for f in p["facts"]}
        status = facts.get("driver.nvml.status", {}).get("value")
        statuses[str(status)] += 1
        message = str(facts.get("driver.nvml.status", {}).get("reason") or "")
        if message:
            messages[message[:110]] += 1
        hung += "driver.nvml_hung" in codes
        unverified += "gpu.unverified" in codes
        starved += status == "starved"
        nvml_ok += status == "ok"
    n = opts.runs
    print("%d parallel healthy runs, --timeout %g, %d CPUs, %.1fs wall" % (n, opts.timeout, os.cpu_count() or 0, wall))
    print("driver.nvml_hung (false: the driver is healthy): %d (%.0f%%)" % (hung, 100.0 * hung / n))
    print("NVML answered in time: %d (%.0f%%); starved (machine too busy, said so): %d (%.0f%%)" % (
        nvml_ok, 100.0 * nvml_ok / n, starved, 100.0 * starved / n))
    print("gpu.unverified (layer not seen in time): %d; unparsable output: %d" % (unverified, bad))
    print("driver.nvml.status values: %s" % dict(statuses))
    for message, count in messages.most_common(5):
        print("  %3d x %s" % (count, message))
    return 0 if hung == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
