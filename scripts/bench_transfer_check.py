#!/usr/bin/env python3
"""Hold ``envdoctor bench`` to a second opinion on a real GPU: PyTorch's own pinned copies of the same size.

Runs ``envdoctor bench all --format json`` (timed from outside), then, where torch is installed and sees the GPU,
times ``tensor.copy_`` of a pinned host tensor to the GPU and back, and from one GPU buffer to another (bytes
read and written, as the bench counts them), with CUDA events, the same size and number of trials (median).
Prints both per GPU and direction with their ratio, and the bench's wall time.

The bar (issue 26): the two agree within 10% and the whole bench finishes within 10 s. Exit 0 when both hold,
1 when one does not, 2 when the bench could not run. Without torch (or without a GPU torch can use) only the
bench's figures are printed, and only its time is held to the bar.

    python scripts/bench_transfer_check.py [--size 256M] [--trials 5] [--gpu N] [--json]

torch numbers its GPUs as CUDA does; this script sets ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` before importing it, so
its index is NVML's, which the bench uses.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

AGREE = 0.10
WALL_LIMIT = 10.0


def run_bench(size: str, trials: int, gpu: Optional[int]) -> Tuple[int, Optional[Dict[str, Any]], float, str]:
    argv = [sys.executable, "-m", "envdoctor", "bench", "all", "--size", size, "--trials", str(trials),
            "--format", "json"] + (["--gpu", str(gpu)] if gpu is not None else [])
    started = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=600)  # noqa: S603 - our own command
    wall = time.monotonic() - started
    try:
        doc = json.loads(res.stdout) if res.stdout.strip() else None
    except ValueError:
        doc = None
    return res.returncode, doc, wall, res.stderr.strip()


def torch_copies(gpu: int, nbytes: int, trials: int) -> Tuple[Optional[Dict[str, float]], str]:
    """({"h2d": GB/s, "d2h": GB/s, "d2d": GB/s}: medians of copies timed with CUDA events, why not).

    Host copies are pinned; the device-to-device copy counts the bytes read and written, as the bench does."""
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        import torch
    except ImportError:
        return None, "torch is not installed here"
    if not torch.cuda.is_available():
        return None, "torch %s sees no GPU" % torch.__version__
    if gpu >= torch.cuda.device_count():
        return None, "torch sees %d GPU(s), not GPU%d" % (torch.cuda.device_count(), gpu)
    dev = torch.device("cuda", gpu)
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    device_b = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    out: Dict[str, float] = {}
    with torch.cuda.device(dev):
        for name, dst, src in (("h2d", device, host), ("d2h", host, device), ("d2d", device_b, device)):
            rates: List[float] = []
            for n in range(trials + 1):
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                dst.copy_(src, non_blocking=True)
                stop.record()
                stop.synchronize()
                if n:  # the first one warms up, as the bench's does
                    moved = 2 * nbytes if name == "d2d" else nbytes
                    rates.append(moved / (start.elapsed_time(stop) / 1e3) / 1e9)
            out[name] = statistics.median(rates)
    return out, ""


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="256M", help="bytes per copy, as envdoctor bench --size takes it")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--gpu", type=int, default=None)
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = ap.parse_args(argv)
    rc, doc, wall, err = run_bench(args.size, args.trials, args.gpu)
    if doc is None:
        print("envdoctor bench could not run (exit %d): %s" % (rc, err or "no output"))
        return 2
    rows = []
    problems = []
    nbytes = int(doc["options"]["size_bytes"])
    for g in doc["gpus"]:
        mine = {r["test"]: r["gbps"] for r in doc["results"] if r["gpu"] == g["index"]
                and r["memory"] in ("pinned", "device") and r.get("numa") == "local" and r.get("peer") is None}
        theirs, why = torch_copies(g["index"], nbytes, args.trials)
        for test in ("h2d", "d2h", "d2d"):
            row = {"gpu": g["index"], "test": test, "envdoctor_gbps": mine.get(test),
                   "torch_gbps": round(theirs[test], 3) if theirs else None, "why": why}
            if theirs and mine.get(test):
                row["ratio"] = round(mine[test] / theirs[test], 3)
                row["agree"] = abs(row["ratio"] - 1) <= AGREE
                if not row["agree"]:
                    problems.append("GPU%d %s: envdoctor %.1f GB/s, torch %.1f GB/s (%.2f)" % (
                        g["index"], test.upper(), mine[test], theirs[test], row["ratio"]))
            rows.append(row)
    if wall > WALL_LIMIT:
        problems.append("the bench took %.1f s (the bar is %.0f s)" % (wall, WALL_LIMIT))
    if args.json:
        print(json.dumps({"rows": rows, "wall_seconds": round(wall, 2), "bench_exit": rc, "problems": problems,
                          "summary": doc["summary"]}, indent=1))
    else:
        print("envdoctor bench all: %.2f s wall, exit %d (%s)" % (wall, rc, ", ".join(
            "%d %s" % (n, s) for s, n in doc["summary"].items())))
        for r in rows:
            mine_s = "%.1f GB/s" % r["envdoctor_gbps"] if r["envdoctor_gbps"] is not None else "-"
            if r["torch_gbps"] is None:
                print("GPU%d %s  envdoctor %s  torch: %s" % (r["gpu"], r["test"].upper(), mine_s, r["why"]))
            else:
                print("GPU%d %s  envdoctor %s  torch %.1f GB/s  ratio %.3f %s" % (
                    r["gpu"], r["test"].upper(), mine_s, r["torch_gbps"], r.get("ratio", 0),
                    "agree" if r.get("agree") else "DISAGREE"))
        for p in problems:
            print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
