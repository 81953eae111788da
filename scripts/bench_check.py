#!/usr/bin/env python3
"""`envdoctor check --policy` on a live 8-GPU node: wall time and peak memory, and the time limit kept
with a wedged driver.

There is no GPU here: NVML is the fake libnvidia-ml.so.1 of tests/fakenvml (compiled with the system
C compiler) answering for eight H100s (tests/fakenvml/h100.json's board, repeated with its own index,
bus id and UUID).  Everything else is this machine, read live.  Each run is a fresh process; memory is
the whole process tree's peak (every process alive at once, proportional set sizes added up,
sampled every 2 ms) in runs of its own.  Then NVML's init hangs (init.hang_seconds) and the run must
still end within --timeout plus one second.

    python scripts/bench_check.py --runs 15
    python scripts/bench_check.py --json

Targets (issue 16): at most 0.4 s and 40 MiB (issue 28: in every run); within --timeout + 1 s when the driver
hangs.  Printed
as met / not met; no assertion, since these machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.fakenvml.build import build, fake_env, h100_board, write_answers  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_diagnose import _memory_kib as _pss_kib  # noqa: E402  (one process-tree sampler for every bench)
from bench_diagnose import _tree  # noqa: E402

TIME_TARGET, MEMORY_TARGET_MIB = 0.4, 40.0
POLICY = """\
schema_version = 1
[require]
"driver.version" = ">=550"
"gpu.count" = 8
"gpu.*.compute_capability" = ">=8.0"
"gpu.*.ecc_mode_current" = true
"gpu.*.pcie_gen_max" = ">=4"
"gpu.*.pcie_width_current" = 16
[findings]
fail_on = "error"
"""


def eight_h100() -> Dict[str, object]:
    return h100_board(8)


def timed(argv: Sequence[str], env: Dict[str, str], cpu: Optional[List[float]] = None) -> float:
    """Wall seconds of one run; its CPU seconds (every process it waited for) appended to ``cpu``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall


def peak_mib(argv: Sequence[str], env: Dict[str, str]) -> float:
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(_pss_kib(p) for p in _tree(proc.pid)))
        time.sleep(0.002)
    return peak / 1024.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--timeout", type=float, default=2.0, help="--timeout for the wedged-driver run (default 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="envdoctor-bench-check-") as tmp:
        lib = build(os.path.join(tmp, "lib"))
        answers = write_answers(eight_h100(), os.path.join(tmp, "answers.txt"))
        hung = write_answers({"init": {"hang_seconds": 60}}, os.path.join(tmp, "hung.txt"))
        policy = os.path.join(tmp, "policy.toml")
        with open(policy, "w") as fh:
            fh.write(POLICY)
        env = fake_env(lib, answers, dict(os.environ, NO_COLOR="1"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        argv = [sys.executable, "-m", "envdoctor", "check", "--policy", policy, "--format", "prometheus"]
        check = subprocess.run(argv, capture_output=True, text=True, env=env)
        if "envdoctor_gpus 8" not in check.stdout:
            raise SystemExit("the fake NVML did not answer for 8 GPUs: %s" % (check.stdout + check.stderr)[-800:])
        timed(argv, env)  # byte-code and page cache
        cpus: List[float] = []
        walls = [timed(argv, env, cpus) for _ in range(args.runs)]
        mems = [peak_mib(argv, env) for _ in range(args.runs)]  # as many as the timed runs: the target is every run
        hung_env = fake_env(lib, hung, dict(os.environ, NO_COLOR="1"))
        wedged = timed(argv + ["--timeout", str(args.timeout)], hung_env)
    result = {"runs": args.runs, "cpus": os.cpu_count(), "wall_median_s": round(statistics.median(walls), 3),
              "wall_min_s": round(min(walls), 3), "cpu_median_s": round(statistics.median(cpus), 3),
              "load_average": float(open("/proc/loadavg").read().split()[0]),
              "peak_memory_mib": round(statistics.median(mems), 1), "peak_memory_max_mib": round(max(mems), 1),
              "peak_memory_runs_mib": [round(m, 1) for m in mems],
              "wedged_driver_wall_s": round(wedged, 2), "wedged_timeout_s": args.timeout}
    result["time_target_met"] = result["wall_median_s"] <= TIME_TARGET
    result["memory_target_met"] = max(mems) <= MEMORY_TARGET_MIB  # in every run, not only the median
    result["wedged_target_met"] = wedged <= args.timeout + 1.0
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("envdoctor check --policy, live, fake NVML with 8 H100s, %d runs, %s CPUs" % (args.runs, os.cpu_count()))
        print("  wall   median %.3f s (min %.3f; CPU median %.3f s; load average %.1f)   target <= %.1f s: %s" % (
            result["wall_median_s"], result["wall_min_s"], result["cpu_median_s"], result["load_average"],
            TIME_TARGET, "met" if result["time_target_met"] else "NOT met"))
        print("  memory peak %.1f MiB median, %.1f MiB the largest of %d runs (process tree, PSS)   target <= %.0f MiB "
              "in every run: %s" % (result["peak_memory_mib"], result["peak_memory_max_mib"], len(mems),
                                     MEMORY_TARGET_MIB, "met" if result["memory_target_met"] else "NOT met"))
        print("  wedged driver: %.2f s with --timeout %g   target <= %g s: %s" % (
            wedged, args.timeout, args.timeout + 1, "met" if result["wedged_target_met"] else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
