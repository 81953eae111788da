#!/usr/bin/env python3
"""What the library checks cost, and whether the symbol prediction agrees with the real loader.

Against a real environment (``--python``: an interpreter with torch installed, by default this one):

1. **Agreement.** For every torch extension module envdoctor finds (torchvision, and every package requiring
   torch), the symbols envdoctor predicts missing against torch/lib, and what the machine's own loader says when
   the module is loaded after ``import torch`` (``ctypes.CDLL``, RTLD_NOW: every undefined symbol is bound at
   load). Printed side by side; the script exits 1 on any disagreement.
2. **Cost.** The probes ``diagnose`` runs for the frameworks (frameworks, requires, linkage, dlopen) on a fresh
   host each run, and the same without the new work (``requires`` and the closure and symbol look-ups), as
   medians over ``--runs`` runs and their ratio; then ``envdoctor libs`` on torch's main CUDA library.

Usage: python scripts/bench_libs.py --python ~/venv/bin/python --runs 9 [--json]
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


def cost(python: str, runs: int) -> Dict[str, float]:
    with_new = ("python", "frameworks", "requires", "linkage", "dlopen", "cuda", "libraries", "driver")
    without = ("python", "frameworks", "linkage", "dlopen", "cuda", "libraries", "driver")

    def run(only: Any) -> None:
        run_probes(LiveHost(timeout=60, python_executable=python), only=only)

    t_new = _time(lambda: run(with_new), runs)
    t_old = _time(lambda: run(without), runs)
    host = LiveHost(timeout=60, python_executable=python)
    torch = next((d for d in host.distributions() if d.key == "torch"), None)
    out = {"framework probes with requirements, closure and symbols (s)": t_new,
           "framework probes without the requirements probe (s)": t_old}
    if torch is not None:
        main = os.path.join(torch.location, "torch", "lib", "libtorch_cuda.so")
        if not os.path.exists(main):
            main = os.path.join(torch.location, "torch", "lib", "libtorch_cpu.so")
        envdoctor = [sys.executable, "-m", "envdoctor", "libs", main, "--format", "json"]
        out["envdoctor libs %s (s)" % os.path.basename(main)] = _time(
            lambda: subprocess.run(envdoctor, capture_output=True, timeout=300), max(1, runs // 3))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose torch is measured")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = agreement(args.python)
    times = cost(args.python, args.runs)
    if args.json:
        print(json.dumps({"agreement": rows, "cost": times}, indent=2))
    else:
        for r in rows:
            print("%-5s %-14s %s\n      envdoctor: %s\n      loader:    %s" % (
                "same" if r["agree"] else "DIFF", r["package"], r["module"], r["envdoctor"], r["loader"]))
        print()
        for k, v in times.items():
            print("%-70s %.3f" % (k, v))
        keys = list(times)
        if len(keys) >= 2 and times[keys[1]]:
            print("%-70s %.2fx" % ("ratio (with / without)", times[keys[0]] / times[keys[1]]))
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
