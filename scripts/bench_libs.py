#!/usr/bin/env python3
"""What the library checks cost, and whether the symbol prediction agrees with the real loader.

Against a real environment (``--python``: an interpreter with torch installed, by default this one):

1. **Agreement.** For every torch extension module envdoctor finds (torchvision, and every package requiring
   torch), the symbols envdoctor predicts missing against torch/lib, and what the machine's own loader says when
   the module is loaded after ``import torch`` (``ctypes.CDLL``, RTLD_NOW: every undefined symbol is bound at
   load). Printed side by side; the script exits 1 on any disagreement.
2. **Cost.** The median time of each framework probe (frameworks, requires, linkage, dlopen) on a fresh host,
   of ``envdoctor libs`` on torch's main library, and of the whole ``envdoctor diagnose --format json``,
   alternating with another source tree (``--against ../main``) when given, and their ratio.

Usage: python scripts/bench_libs.py --python ~/venv/bin/python --runs 9 [--against ../main] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envdoctor.host.live import LiveHost  # noqa: E402
from envdoctor.probes import linkage, loader, run_probes  # noqa: E402
from envdoctor.probes.requires import check_installed  # noqa: E402


def _real(python: str, torch_lib: str, modules: List[str]) -> Dict[str, str]:
    """module -> "ok" or the loader's error, loaded after import torch (its libraries then in the process)."""
    code = ("import sys, ctypes, json\nimport torch\nout = {}\nfor p in sys.argv[1:]:\n    try:\n"
            "        ctypes.CDLL(p); out[p] = 'ok'\n    except OSError as e:\n        out[p] = str(e)\n"
            "print(json.dumps(out))")
    r = subprocess.run([python, "-c", code] + modules, capture_output=True, text=True, timeout=300)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {m: "could not ask: %s" % (r.stderr.strip().splitlines() or ["?"])[-1] for m in modules}


def agreement(python: str) -> List[Dict[str, Any]]:
    host = LiveHost(timeout=60, python_executable=python)
    dists = host.distributions()
    torch = next((d for d in dists if d.key == "torch"), None)
    if torch is None:
        raise SystemExit("no torch in %s" % python)
    deps = (check_installed(host).get("dependents") or {}).get("torch", [])
    files = linkage.extension_files(host, torch.location, dists, deps)
    value = {"path": torch.location}
    missing_libs, symbols = linkage.extension_linkage(host, value, loader.loader_config(host), dists, deps)
    predicted: Dict[str, str] = {p: "ok" for _, p in files}
    for e in missing_libs:
        predicted[e["path"]] = "needs %s" % e["soname"]
    for e in symbols:
        predicted[e["path"]] = "undefined symbol: %s" % e["missing"][0]
    real = _real(python, os.path.join(torch.location, "torch", "lib"), [p for _, p in files])
    rows = []
    for d, path in files:
        got, want = predicted[path], real.get(path, "?")
        agree = (got == "ok") == (want == "ok") and (got == "ok" or got.split(": ")[-1].split()[-1] in want)
        rows.append({"package": d.key, "module": path, "envdoctor": got, "loader": want, "agree": agree})
    return rows


def _time(fn: Any, runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def _diagnose(python: str, tree: str) -> float:
    """One ``envdoctor diagnose --format json`` of ``python``'s environment, run from the source tree ``tree``."""
    env = dict(os.environ, PYTHONPATH=tree)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--python", python, "--format", "json"],
                   capture_output=True, timeout=300, env=env, cwd="/")
    return time.perf_counter() - t


def cost(python: str, runs: int, against: str = "") -> Dict[str, float]:
    """Medians: each framework probe's own time on a fresh host (sequential runs, so one probe's time is its own),
    ``envdoctor libs`` on torch's main library, and the whole ``diagnose`` (alternating with ``against``, another
    source tree, when given)."""
    per: Dict[str, List[float]] = {}
    only = ("python", "frameworks", "requires", "linkage", "dlopen", "driver", "cuda", "libraries")
    for _ in range(runs):
        for r in run_probes(LiveHost(timeout=60, python_executable=python), only=only, parallel=False):
            per.setdefault("probe %s (ms)" % r.name, []).append(r.duration * 1000)
    out = {k: statistics.median(v) for k, v in per.items() if k.split()[1] in ("frameworks", "requires", "linkage",
                                                                               "dlopen")}
    host = LiveHost(timeout=60, python_executable=python)
    torch = next((d for d in host.distributions() if d.key == "torch"), None)
    if torch is not None:
        main = os.path.join(torch.location, "torch", "lib", "libtorch_cuda.so")
        if not os.path.exists(main):
            main = os.path.join(torch.location, "torch", "lib", "libtorch_cpu.so")
        libs = [sys.executable, "-m", "envdoctor", "libs", main, "--format", "json"]
        out["envdoctor libs %s (ms)" % os.path.basename(main)] = 1000 * _time(
            lambda: subprocess.run(libs, capture_output=True, timeout=300), max(1, runs // 3))
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mine, theirs = [], []
    for _ in range(runs):
        mine.append(_diagnose(python, here))
        if against:
            theirs.append(_diagnose(python, against))
    out["diagnose, this tree (ms)"] = 1000 * statistics.median(mine)
    if against:
        out["diagnose, %s (ms)" % against] = 1000 * statistics.median(theirs)
        out["ratio (this tree / %s)" % against] = statistics.median(mine) / statistics.median(theirs)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose torch is measured")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--against", default="", metavar="TREE",
                    help="another envdoctor source tree (e.g. a worktree of main) to time diagnose against")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = agreement(args.python)
    times = cost(args.python, args.runs, args.against)
    if args.json:
        print(json.dumps({"agreement": rows, "cost": times}, indent=2))
    else:
        for r in rows:
            print("%-5s %-14s %s\n      envdoctor: %s\n      loader:    %s" % (
                "same" if r["agree"] else "DIFF", r["package"], r["module"], r["envdoctor"], r["loader"]))
        print()
        for k, v in times.items():
            print("%-70s %s" % (k, "%.2fx" % v if k.startswith("ratio") else "%.1f" % v))
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
