#!/usr/bin/env python3
"""Time `envdoctor diagnose` against PyTorch's `collect_env` side by side, on this machine.

Both run in the same Python environment (the interpreter running this script),
alternating, several times each, as fresh processes. For each run the wall time
and the peak RSS of the largest process (wait4's rusage) are recorded; separate
runs sample the memory of the whole process tree (every process alive at once,
PSS added up), which is what the memory target is judged on. The medians and
their ratios are printed.

    pip install torch==2.13.0        # CPU wheel; needed for collect_env
    python scripts/bench_diagnose.py --runs 9
    python scripts/bench_diagnose.py --json   # machine-readable

Other peers can be added with --peer 'NAME=COMMAND ...' (e.g. a cuda-doctor or
env-doctor installed in the same environment); they are timed the same way.
The targets from the issue (15x faster, at most 1/4 of the peak memory) are
printed as met / not met; no assertion, since these machines are noisy.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Sequence, Tuple

#: Every tool runs from a directory of its own, so that ``python -m envdoctor`` imports the copy under test,
#: never a checkout in the current directory (which ``-m`` puts first on sys.path).
WORKDIR = tempfile.mkdtemp(prefix="envdoctor-bench-cwd-")
atexit.register(shutil.rmtree, WORKDIR, True)


def with_path(copy: str) -> str:
    """PYTHONPATH for a copy of envdoctor: the copy first, then what the caller had (where envdoctor's own
    dependencies may live); replacing it silently dropped them, and envdoctor failed at import."""
    rest = os.environ.get("PYTHONPATH")
    return copy + (os.pathsep + rest if rest else "")


def check_it_works(argv: Sequence[str]) -> None:
    """One run of envdoctor that must end with a report (exit 0 or 1 and JSON with probes): a benchmark of a
    command that fails at once measures nothing."""
    env = dict(os.environ, NO_COLOR="1")
    r = subprocess.run(list(argv), capture_output=True, env=env, cwd=WORKDIR, timeout=120)
    try:
        doc = json.loads(r.stdout)
        ok = r.returncode in (0, 1) and isinstance(doc.get("probes"), list) and doc["probes"]
    except ValueError:
        ok = False
    if not ok:
        why = (r.stderr or r.stdout)[-600:].decode("utf-8", "replace")
        sys.exit("%s does not produce a report (exit %d): %s" % (" ".join(argv), r.returncode, why))


def measure(argv: Sequence[str]) -> Tuple[float, int, int]:
    """(wall seconds, peak RSS in KiB, exit code) of one fresh run of ``argv``."""
    env = dict(os.environ, NO_COLOR="1")
    # As installed by pip, both tools run from byte-compiled files; a development shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise make only the editable checkout recompile every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=WORKDIR)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    return wall, int(usage.ru_maxrss), int(proc.returncode)


def _tree(pid: int) -> List[int]:
    """``pid`` and its descendants, from /proc/PID/task/TID/children, leaving out a child that shares its
    parent's memory: one made by vfork() that has not exec'd yet (subprocess starts commands that way),
    whose /proc files show the parent's memory a second time."""
    out, todo = [], [(pid, 0)]
    while todo:
        p, parent = todo.pop()
        if not (parent and _same_memory(parent, p)):
            out.append(p)
        try:
            for tid in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, tid)) as fh:
                    todo.extend((int(c), p) for c in fh.read().split())
        except (OSError, ValueError):
            pass
    return out


#: kcmp(2)'s system call number (KCMP_VM compares two processes' address spaces), by machine.
_SYS_KCMP = {"x86_64": 312, "aarch64": 272, "ppc64le": 354, "s390x": 343}
_KCMP_VM = 1
_libc: List[object] = []


def _same_memory(a: int, b: int) -> bool:
    """Whether processes ``a`` and ``b`` share one address space (kcmp(2); False where it cannot tell)."""
    import ctypes
    import platform

    number = _SYS_KCMP.get(platform.machine())
    if number is None:
        return False
    if not _libc:
        _libc.append(ctypes.CDLL(None, use_errno=True))
    return _libc[0].syscall(number, a, b, _KCMP_VM, 0, 0) == 0  # type: ignore[attr-defined,no-any-return]


def _memory_kib(pid: int) -> int:
    """Proportional set size (shared pages split between the processes sharing them), else RSS."""
    for path, field in (("/proc/%d/smaps_rollup" % pid, "Pss:"), ("/proc/%d/status" % pid, "VmRSS:")):
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith(field):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return 0


def measure_tree_memory(argv: Sequence[str]) -> int:
    """Peak memory (KiB) of the whole process tree, all processes alive at once added up.

    wait4's ru_maxrss is the peak of the largest single process only; a tool that forks workers
    (envdoctor's NVML child) or runs subprocesses (collect_env runs pip, nvidia-smi) would
    be under-counted.  Sampled every 2 ms, in runs of their own so the sampling does not slow
    the timed runs.
    """
    env = dict(os.environ, NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=WORKDIR)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(_memory_kib(p) for p in _tree(proc.pid)))
        time.sleep(0.002)
    return peak


def installed_copy() -> str:
    """envdoctor as `pip install` leaves it: plain files (the recipes among them), byte-compiled.

    A development checkout is usually installed editable, which recompiles nothing only if bytecode may
    be written; users run a regular install (torch, beside it, was installed the regular way too). The
    copy is the checkout's own code.
    """
    import atexit
    import compileall
    import shutil
    import tempfile

    import envdoctor

    src = os.path.dirname(os.path.abspath(envdoctor.__file__))
    dest = tempfile.mkdtemp(prefix="envdoctor-bench-")
    atexit.register(shutil.rmtree, dest, True)  # removed when the benchmark ends, however it ends
    # envdoctor/recipes, a link to the checkout's recipes/, is copied as the files it points to (as in the wheel)
    shutil.copytree(src, os.path.join(dest, "envdoctor"), ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(dest, quiet=1)
    return dest


def copy_of_revision(ref: str) -> str:
    """envdoctor as of git revision ``ref`` (e.g. ``main``), laid out like an install, byte-compiled."""
    import atexit
    import compileall
    import shutil
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dest = tempfile.mkdtemp(prefix="envdoctor-bench-ref-")
    atexit.register(shutil.rmtree, dest, True)
    archive = subprocess.run(["git", "-C", root, "archive", ref, "envdoctor", "recipes"], stdout=subprocess.PIPE,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    if os.path.isdir(os.path.join(dest, "recipes")) and not os.path.isdir(os.path.join(dest, "envdoctor", "recipes")):
        shutil.move(os.path.join(dest, "recipes"), os.path.join(dest, "envdoctor", "recipes"))
    compileall.compile_dir(dest, quiet=1)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="runs per tool (default 7)")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=COMMAND",
                    help="another tool to time, e.g. 'cuda-doctor=cuda-doctor'")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--against", metavar="GITREF",
                    help="also time the envdoctor of this git revision (e.g. main) and print the ratio")
    args = ap.parse_args()

    py = sys.executable
    installed = installed_copy()
    tools: Dict[str, List[str]] = {
        "envdoctor diagnose": ["env", "PYTHONPATH=" + with_path(installed), py, "-m", "envdoctor", "diagnose",
                               "--format", "json"],
    }
    if args.against:
        ref = with_path(copy_of_revision(args.against))
        tools["diagnose at " + args.against] = ["env", "PYTHONPATH=" + ref, py, "-m", "envdoctor", "diagnose",
                                                "--format", "json"]
    have_torch = subprocess.run([py, "-c", "import importlib.util,sys;"
                                 "sys.exit(importlib.util.find_spec('torch') is None)"]).returncode == 0
    if have_torch:
        tools["torch collect_env"] = [py, "-m", "torch.utils.collect_env"]
    else:
        print("note: torch is not installed in this environment; `pip install torch==2.13.0` to compare "
              "with collect_env", file=sys.stderr)
    for spec in args.peer:
        name, _, cmd = spec.partition("=")
        tools[name.strip()] = shlex.split(cmd)

    for name, argv in tools.items():
        if name == "envdoctor diagnose" or name.startswith("diagnose at "):
            check_it_works(argv)
    results: Dict[str, List[Tuple[float, int, int]]] = {name: [] for name in tools}
    for argv in tools.values():  # one warm-up each: page cache, .pyc files
        measure(argv)
    for _ in range(args.runs):
        for name, argv in tools.items():
            results[name].append(measure(argv))
    tree_memory: Dict[str, List[int]] = {name: [] for name in tools}
    for _ in range(max(3, args.runs // 3)):
        for name, argv in tools.items():
            tree_memory[name].append(measure_tree_memory(argv))

    summary = {}
    for name, runs in results.items():
        summary[name] = {
            "runs": len(runs),
            "wall_median_s": statistics.median(r[0] for r in runs),
            "wall_min_s": min(r[0] for r in runs),
            "peak_rss_median_mib": statistics.median(r[1] for r in runs) / 1024.0,
            "peak_tree_memory_median_mib": statistics.median(tree_memory[name]) / 1024.0,
            "exit_codes": sorted({r[2] for r in runs}),
        }
    ed = summary["envdoctor diagnose"]
    for name, s in summary.items():
        if name != "envdoctor diagnose":
            s["envdoctor_speedup"] = s["wall_median_s"] / ed["wall_median_s"]
            s["envdoctor_memory_fraction"] = ed["peak_tree_memory_median_mib"] / s["peak_tree_memory_median_mib"]

    if args.json:
        print(json.dumps({"python": sys.version.split()[0], "results": summary}, indent=2))
        return 0
    print("Python %s, %d runs each (medians)\n" % (sys.version.split()[0], args.runs))
    print("%-22s %10s %10s %16s %18s" % ("tool", "wall (ms)", "min (ms)", "largest RSS (MiB)",
                                          "tree memory (MiB)"))
    for name, s in summary.items():
        print("%-22s %10.0f %10.0f %16.1f %18.1f" % (name, s["wall_median_s"] * 1000, s["wall_min_s"] * 1000,
                                                   s["peak_rss_median_mib"], s["peak_tree_memory_median_mib"]))
    print("\nlargest RSS: peak of the biggest single process (wait4); tree memory: peak of all its processes "
          "together (PSS, sampled)")
    if args.against:
        ref = summary["diagnose at " + args.against]
        print("\nthis tree vs %s: %.0f ms against %.0f ms (median), %.2fx its time" % (
            args.against, ed["wall_median_s"] * 1000, ref["wall_median_s"] * 1000,
            ed["wall_median_s"] / ref["wall_median_s"]))
    for name, s in summary.items():
        if name == "envdoctor diagnose" or name.startswith("diagnose at "):
            continue
        speed, mem = s["envdoctor_speedup"], s["envdoctor_memory_fraction"]
        line = "\nvs %s: envdoctor is %.1fx faster, uses %.2f of its peak tree memory" % (name, speed, mem)
        if name == "torch collect_env":  # the targets set for envdoctor (issue: diagnose)
            line += " (targets: >= 15x faster: %s; <= 0.25 of the memory: %s)" % (
                "met" if speed >= 15 else "NOT met", "met" if mem <= 0.25 else "NOT met")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
