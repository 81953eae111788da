#!/usr/bin/env python3
"""Time `envdoctor diagnose` against the tools people use today, side by side, on this machine.

Each tool runs as a fresh process, in its own environment, alternating (pairs A B A B, the order
reversed every other round), several times each. Every run's wall time, CPU time (user + system of
the process and every process it waited for, wait4's rusage) and the peak RSS of its largest
process are recorded; separate runs sample the memory of the whole process tree (every process
alive at once, PSS added up). Medians are printed, with the load average before and after.

The tools:
- ``envdoctor``: this checkout, laid out as pip installs it (byte-compiled, no editable finder), run
  by ``--python`` (default: this interpreter; a venv with only envdoctor's dependencies is what a
  new user has);
- ``its dependencies``: the same interpreter importing every runtime dependency envdoctor declares
  (click, nvidia-ml-py, packaging, distro, requests): the floor under any tool built on them;
- ``collect_env``: ``python -m torch.utils.collect_env`` run by ``--torch-python`` (a venv holding
  torch: ``pip install torch==2.13.0``); skipped when that interpreter has no torch;
- ``--peer 'NAME=COMMAND ...'``: other tools, each in its own venv (env-doctor, cuda-doctor);
- ``--against REV``: envdoctor as of git revision REV, run by the same interpreter.

``--gpus N`` runs every tool with NVML answered by the stand-in library of tests/fakenvml for N H100
boards (N = 0: this machine's own NVML, none on a machine without a GPU). ``--scaling`` times only
envdoctor at 1 and 64 stand-in GPUs. The targets (issue 28) are printed as met / not met, never
asserted (these machines are noisy). ``--readme`` rewrites the README's measured-speed block from this
run's figures (``--save FILE`` keeps them; ``--readme --load FILE`` writes a saved run's).

    python scripts/bench_diagnose.py --runs 9 --python ED_VENV/bin/python --torch-python TORCH_VENV/bin/python \
        --peer 'env-doctor=ENVDOC_VENV/bin/env-doctor check' --peer 'cuda-doctor=CUDADOC_VENV/bin/cuda-doctor diagnose'
    python scripts/bench_diagnose.py --gpus 8 ...          # the stand-in 8-GPU board
    python scripts/bench_diagnose.py --scaling             # 64 GPUs against one
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
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: Every tool runs from a directory of its own, so that ``python -m envdoctor`` imports the copy under test,
#: never a checkout in the current directory (which ``-m`` puts first on sys.path).
WORKDIR = tempfile.mkdtemp(prefix="envdoctor-bench-cwd-")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
atexit.register(shutil.rmtree, WORKDIR, True)


def with_path(copy: str) -> str:
    """PYTHONPATH for a copy of envdoctor: the copy first, then what the caller had (where envdoctor's own
    dependencies may live); replacing it silently dropped them, and envdoctor failed at import."""
    rest = os.environ.get("PYTHONPATH")
    return copy + (os.pathsep + rest if rest else "")


def tool_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment every timed run gets: the caller's, no colour, byte code as pip leaves it."""
    env = dict(os.environ, NO_COLOR="1")
    # As installed by pip, every tool runs from byte-compiled files; a development shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise make only the editable checkout recompile every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra or {})
    return env


def check_it_works(argv: Sequence[str], env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """One run of envdoctor that must end with a report (exit 0 or 1 and JSON with probes): a benchmark of a
    command that fails at once measures nothing. Returns the report."""
    env = tool_env(env)
    r = subprocess.run(list(argv), capture_output=True, env=env, cwd=WORKDIR, timeout=120)
    try:
        doc = json.loads(r.stdout)
        ok = r.returncode in (0, 1) and isinstance(doc.get("probes"), list) and doc["probes"]
    except ValueError:
        ok = False
    if not ok:
        why = (r.stderr or r.stdout)[-600:].decode("utf-8", "replace")
        sys.exit("%s does not produce a report (exit %d): %s" % (" ".join(argv), r.returncode, why))
    return doc  # type: ignore[no-any-return]


def measure(argv: Sequence[str], env: Optional[Dict[str, str]] = None) -> Tuple[float, int, int, float]:
    """(wall seconds, peak RSS in KiB of its largest process, exit code, CPU seconds) of one fresh run of
    ``argv``: the CPU of the process and of every descendant it waited for (wait4's rusage)."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=tool_env(env),
                            cwd=WORKDIR)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    return wall, int(usage.ru_maxrss), int(proc.returncode), usage.ru_utime + usage.ru_stime


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


def measure_tree_memory(argv: Sequence[str], env: Optional[Dict[str, str]] = None) -> int:
    """Peak memory (KiB) of the whole process tree, all processes alive at once added up.

    wait4's ru_maxrss is the peak of the largest single process only; a tool that forks workers
    (envdoctor's NVML child) or runs subprocesses (collect_env runs pip, nvidia-smi) would
    be under-counted.  Sampled every 2 ms, in runs of their own so the sampling does not slow
    the timed runs.
    """
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=tool_env(env),
                            cwd=WORKDIR)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(_memory_kib(p) for p in _tree(proc.pid)))
        time.sleep(0.002)
    return peak


def installed_copy() -> str:
    """envdoctor as `pip install` leaves it: plain files (the recipes among them), byte-compiled.

    A development checkout is usually installed editable, which recompiles nothing only if bytecode may
    be written; users run a regular install (torch, beside it, was installed the regular way too). The
    copy is this checkout's own code.
    """
    import compileall

    src = os.path.join(ROOT, "envdoctor")
    dest = tempfile.mkdtemp(prefix="envdoctor-bench-")
    atexit.register(shutil.rmtree, dest, True)  # removed when the benchmark ends, however it ends
    # envdoctor/recipes, a link to the checkout's recipes/, is copied as the files it points to (as in the wheel)
    shutil.copytree(src, os.path.join(dest, "envdoctor"), ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(dest, quiet=1)
    return dest


def copy_of_revision(ref: str) -> str:
    """envdoctor as of git revision ``ref`` (e.g. ``main``), laid out like an install, byte-compiled."""
    import compileall

    root = ROOT
    dest = tempfile.mkdtemp(prefix="envdoctor-bench-ref-")
    atexit.register(shutil.rmtree, dest, True)
    archive = subprocess.run(["git", "-C", root, "archive", ref, "envdoctor", "recipes"], stdout=subprocess.PIPE,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    if os.path.isdir(os.path.join(dest, "recipes")) and not os.path.isdir(os.path.join(dest, "envdoctor", "recipes")):
        shutil.move(os.path.join(dest, "recipes"), os.path.join(dest, "envdoctor", "recipes"))
    compileall.compile_dir(dest, quiet=1)
    return dest


#: envdoctor's runtime dependencies (pyproject.toml), imported as a program built on them would.
DEPENDENCIES = "import click, pynvml, distro, requests, packaging.version, packaging.specifiers"
#: Those a live diagnose imports in its own process (pynvml is imported by the NVML child, requests never, click
#: not for plain options: envdoctor/cli/fastpath.py): a stricter floor, shown beside the target.
DEPENDENCIES_USED = "import distro, packaging.version, packaging.specifiers"
#: The targets of issue 28.
TARGET_COLLECT_ENV, TARGET_PEER, TARGET_DEPS, TARGET_SCALING = 15.0, 4.0, 1.3, 1.5
ENVDOCTOR = "envdoctor"
DEPS = "its dependencies"
DEPS_USED = "those it imports"
COLLECT_ENV = "collect_env"
README_BEGIN, README_END = "<!-- bench_diagnose.py --readme: begin -->", "<!-- bench_diagnose.py --readme: end -->"


def load_average() -> float:
    try:
        with open("/proc/loadavg") as fh:
            return float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def stand_in(gpus: int, folder: str) -> Dict[str, str]:
    """Environment variables that make NVML answer for ``gpus`` H100 boards (tests/fakenvml)."""
    sys.path.insert(0, ROOT)
    from tests.fakenvml.build import build, h100_board, write_answers

    lib = build(os.path.join(folder, "lib"))
    answers = write_answers(h100_board(gpus), os.path.join(folder, "answers-%d.txt" % gpus))
    return {"LD_LIBRARY_PATH": lib + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH")
                                      else ""), "FAKE_NVML_ANSWERS": answers}


def has_torch(python: str) -> bool:
    code = "import importlib.util,sys;sys.exit(importlib.util.find_spec('torch') is None)"
    return subprocess.run([python, "-c", code],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def run_series(tools: Dict[str, List[str]], envs: Dict[str, Dict[str, str]], runs: int) -> Dict[str, Dict[str, Any]]:
    """Every tool ``runs`` times, alternating (the order reversed every other round), then the tree memory runs;
    medians per tool."""
    names = list(tools)
    for name in names:  # one warm-up each: page cache, .pyc files
        measure(tools[name], envs.get(name))
    results: Dict[str, List[Tuple[float, int, int, float]]] = {name: [] for name in names}
    for i in range(runs):
        for name in (names if i % 2 == 0 else names[::-1]):
            results[name].append(measure(tools[name], envs.get(name)))
    tree: Dict[str, List[int]] = {name: [] for name in names}
    for i in range(max(3, runs // 3)):
        for name in (names if i % 2 == 0 else names[::-1]):
            tree[name].append(measure_tree_memory(tools[name], envs.get(name)))
    out: Dict[str, Dict[str, Any]] = {}
    for name, rs in results.items():
        out[name] = {
            "runs": len(rs),
            "wall_median_s": round(statistics.median(r[0] for r in rs), 4),
            "wall_min_s": round(min(r[0] for r in rs), 4),
            "cpu_median_s": round(statistics.median(r[3] for r in rs), 4),
            "largest_process_mib": round(statistics.median(r[1] for r in rs) / 1024.0, 1),
            "tree_memory_mib": round(statistics.median(tree[name]) / 1024.0, 1),
            "tree_memory_max_mib": round(max(tree[name]) / 1024.0, 1),
            "exit_codes": sorted({r[2] for r in rs}),
        }
    return out


def judge(summary: Dict[str, Dict[str, Any]], peers: Sequence[str]) -> Dict[str, Any]:
    """The issue's targets for one series: ratios and met / not met."""
    ed = summary[ENVDOCTOR]
    targets: Dict[str, Any] = {}
    if COLLECT_ENV in summary:
        ratio = summary[COLLECT_ENV]["wall_median_s"] / ed["wall_median_s"]
        targets["vs collect_env"] = {"ratio": round(ratio, 1), "target": ">= %gx" % TARGET_COLLECT_ENV,
                                     "cpu_ratio": round(summary[COLLECT_ENV]["cpu_median_s"] / ed["cpu_median_s"], 1),
                                     "met": ratio >= TARGET_COLLECT_ENV}
    for name in peers:
        ratio = summary[name]["wall_median_s"] / ed["wall_median_s"]
        targets["vs " + name] = {"ratio": round(ratio, 1), "target": ">= %gx" % TARGET_PEER,
                                 "cpu_ratio": round(summary[name]["cpu_median_s"] / ed["cpu_median_s"], 1),
                                 "met": ratio >= TARGET_PEER}
        # a peer's single process: the smaller of its largest process's RSS and its whole tree's PSS
        theirs = min(summary[name]["largest_process_mib"], summary[name]["tree_memory_mib"])
        targets["memory vs " + name] = {"envdoctor_tree_mib": ed["tree_memory_max_mib"], "peer_process_mib": theirs,
                                        "target": "tree < its process", "met": ed["tree_memory_max_mib"] < theirs}
    for name, what in ((DEPS, "vs importing its dependencies"), (DEPS_USED, "vs importing those it imports")):
        if name in summary:
            ratio = ed["wall_median_s"] / summary[name]["wall_median_s"]
            cpu = ed["cpu_median_s"] / summary[name]["cpu_median_s"]
            targets[what] = {"ratio": round(ratio, 2), "cpu_ratio": round(cpu, 2), "target": "<= %gx" % TARGET_DEPS,
                             "met": ratio <= TARGET_DEPS}
    return targets


def scaling(python: str, copy: str, runs: int, folder: str) -> Dict[str, Any]:
    """envdoctor at 1 and at 64 stand-in GPUs, alternating: the ratio of the medians (wall and CPU)."""
    argv = ["env", "PYTHONPATH=" + with_path(copy), python, "-m", "envdoctor", "diagnose", "--format", "json"]
    tools = {"1 GPU": argv, "64 GPUs": list(argv)}
    envs = {"1 GPU": stand_in(1, folder), "64 GPUs": stand_in(64, folder)}
    for name in tools:
        doc = check_it_works(tools[name], envs[name])
        count = [f.get("value") for p in doc["probes"] for f in p["facts"] if f.get("key") == "gpu.count"]
        if count != [int(name.split()[0])]:
            sys.exit("the stand-in NVML did not answer for %s (gpu.count %s)" % (name, count))
    summary = run_series(tools, envs, runs)
    wall = summary["64 GPUs"]["wall_median_s"] / summary["1 GPU"]["wall_median_s"]
    cpu = summary["64 GPUs"]["cpu_median_s"] / summary["1 GPU"]["cpu_median_s"]
    return {"results": summary, "targets": {"64 GPUs vs 1": {
        "ratio": round(wall, 2), "cpu_ratio": round(cpu, 2), "target": "<= %gx" % TARGET_SCALING,
        "met": wall <= TARGET_SCALING}}}


def print_series(title: str, series: Dict[str, Any]) -> None:
    print("\n%s: %d runs each, load average %.1f before, %.1f after" % (
        title, series["runs"], series["load_before"], series["load_after"]))
    print("%-22s %10s %10s %10s %14s %14s" % ("tool", "wall (ms)", "min (ms)", "CPU (ms)", "largest (MiB)",
                                               "tree (MiB)"))
    for name, s in series["results"].items():
        print("%-22s %10.0f %10.0f %10.0f %14.1f %14.1f" % (
            name, s["wall_median_s"] * 1000, s["wall_min_s"] * 1000, s["cpu_median_s"] * 1000,
            s["largest_process_mib"], s["tree_memory_mib"]))
    for what, t in series["targets"].items():
        if "ratio" in t:
            extra = " (CPU %.2fx)" % t["cpu_ratio"] if "cpu_ratio" in t else ""
            print("  %-34s %6.2fx%s   target %s: %s" % (what, t["ratio"], extra, t["target"],
                                                       "met" if t["met"] else "NOT met"))
        else:
            print("  %-34s %.1f MiB against %.1f MiB   target %s: %s" % (
                what, t["envdoctor_tree_mib"], t["peer_process_mib"], t["target"], "met" if t["met"] else "NOT met"))


def readme_block(saved: Dict[str, Any]) -> str:
    """The README's measured-speed figures, from a saved run (never copied by hand)."""
    lines = [README_BEGIN, ""]
    for key in sorted(k for k in saved if k.startswith("gpus=")):
        series = saved[key]
        gpus = int(key.split("=")[1])
        where = "no GPU" if gpus == 0 else "the stand-in %d-GPU board (tests/fakenvml, H100 answers)" % gpus
        lines.append("%s, %s, Python %s, %d runs each in alternation, load average %.1f before and %.1f after:" % (
            series["date"], where, series["python"], series["runs"], series["load_before"], series["load_after"]))
        lines.append("")
        lines.append("| tool | wall, median | CPU, median | largest process | process tree |")
        lines.append("|---|---|---|---|---|")
        for name, s in series["results"].items():
            shown = series["commands"].get(name, name)
            lines.append("| %s | %.0f ms | %.0f ms | %.1f MiB | %.1f MiB |" % (
                shown, s["wall_median_s"] * 1000, s["cpu_median_s"] * 1000, s["largest_process_mib"],
                s["tree_memory_mib"]))
        lines.append("")
        verdicts = []
        for what, t in series["targets"].items():
            if "ratio" in t:
                cpu = ", CPU %sx" % _ratio(t["cpu_ratio"]) if "cpu_ratio" in t else ""
                verdicts.append("%s %sx%s (target %s: %s)" % (what, _ratio(t["ratio"]), cpu, t["target"],
                                                                "met" if t["met"] else "not met"))
            else:
                verdicts.append("%s: %.1f against %.1f MiB (%s)" % (
                    what, t["envdoctor_tree_mib"], t["peer_process_mib"], "met" if t["met"] else "not met"))
        lines.append("envdoctor " + "; ".join(verdicts) + ".")
        lines.append("")
    if "scaling" in saved:
        sc = saved["scaling"]
        t = sc["targets"]["64 GPUs vs 1"]
        r = sc["results"]
        lines.append("%s, the stand-in board with 64 GPUs against one (%d runs each, load average %.1f/%.1f): "
                     "%.0f ms against %.0f ms, %.2fx the wall time and %.2fx the CPU (target %s: %s)." % (
                         sc["date"], sc["runs"], sc["load_before"], sc["load_after"],
                         r["64 GPUs"]["wall_median_s"] * 1000, r["1 GPU"]["wall_median_s"] * 1000, t["ratio"],
                         t["cpu_ratio"], t["target"], "met" if t["met"] else "not met"))
        lines.append("")
    lines.append(README_END)
    return "\n".join(lines)


def write_readme(saved: Dict[str, Any]) -> None:
    path = os.path.join(ROOT, "README.md")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        sys.exit("README.md has no %s ... %s block" % (README_BEGIN, README_END))
    text = text[:begin] + readme_block(saved) + text[end + len(README_END):]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print("README.md: measured-speed block rewritten")


def _ratio(value: float) -> str:
    """A ratio with the digits that decide a target: 14.6 stays 14.6 (not "15" beside "target >= 15x: not met")."""
    return "%.1f" % value if value >= 10 else "%.2f" % value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9, help="runs per tool (default 9)")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter that runs envdoctor (its venv holds envdoctor's dependencies only)")
    ap.add_argument("--torch-python", default=None,
                    help="the interpreter of a venv holding torch, for collect_env (default: --python)")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=COMMAND",
                    help="another tool to time, e.g. 'cuda-doctor=VENV/bin/cuda-doctor diagnose'")
    ap.add_argument("--gpus", type=int, default=0, help="NVML answered by the stand-in for this many H100s "
                    "(default 0: this machine's own NVML)")
    ap.add_argument("--scaling", action="store_true", help="time envdoctor only, at 1 and 64 stand-in GPUs")
    ap.add_argument("--against", metavar="GITREF",
                    help="also time the envdoctor of this git revision (e.g. main) and print the ratio")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--save", metavar="FILE", help="keep this run's figures in FILE (beside its other series)")
    ap.add_argument("--load", metavar="FILE", help="with --readme: write the figures saved in FILE, run nothing")
    ap.add_argument("--readme", action="store_true", help="rewrite README.md's measured-speed block")
    args = ap.parse_args()

    if args.load:
        with open(args.load) as fh:
            write_readme(json.load(fh))
        return 0
    folder = tempfile.mkdtemp(prefix="envdoctor-bench-nvml-")
    atexit.register(shutil.rmtree, folder, True)
    copy = installed_copy()
    series: Dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "python": subprocess.run(
        [args.python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip(), "runs": args.runs, "cpus": os.cpu_count(), "load_before": load_average()}
    if args.scaling:
        key = "scaling"
        series.update(scaling(args.python, copy, args.runs, folder))
    else:
        key = "gpus=%d" % args.gpus
        nvml = stand_in(args.gpus, folder) if args.gpus else {}
        py = args.python
        tools: Dict[str, List[str]] = {
            ENVDOCTOR: ["env", "PYTHONPATH=" + with_path(copy), py, "-m", "envdoctor", "diagnose", "--format", "json"],
        }
        commands = {ENVDOCTOR: "`envdoctor diagnose --format json`"}
        if args.against:
            tools["envdoctor at " + args.against] = ["env", "PYTHONPATH=" + with_path(copy_of_revision(args.against)),
                                                     py, "-m", "envdoctor", "diagnose", "--format", "json"]
            commands["envdoctor at " + args.against] = "the same at %s" % args.against
        tools[DEPS] = [py, "-c", DEPENDENCIES]
        commands[DEPS] = "`python -c '%s'`" % DEPENDENCIES
        tools[DEPS_USED] = [py, "-c", DEPENDENCIES_USED]
        commands[DEPS_USED] = "`python -c '%s'`" % DEPENDENCIES_USED
        torch_py = args.torch_python or py
        if has_torch(torch_py):
            tools[COLLECT_ENV] = [torch_py, "-m", "torch.utils.collect_env"]
            commands[COLLECT_ENV] = "`python -m torch.utils.collect_env` (a venv with torch %s)" % subprocess.run(
                [torch_py, "-c", "import importlib.metadata as m; print(m.version('torch'))"], capture_output=True,
                text=True).stdout.strip()
        else:
            print("note: %s has no torch; `pip install torch==2.13.0` in a venv and pass --torch-python to compare "
                  "with collect_env" % torch_py, file=sys.stderr)
        peers = []
        for spec in args.peer:
            name, _, cmd = spec.partition("=")
            tools[name.strip()] = shlex.split(cmd)
            commands[name.strip()] = "`%s` (its own venv)" % " ".join(
                [os.path.basename(shlex.split(cmd)[0])] + shlex.split(cmd)[1:])
            peers.append(name.strip())
        envs = {name: nvml for name in tools}
        for name, argv in tools.items():
            if name.startswith(ENVDOCTOR):
                doc = check_it_works(argv, nvml)
                if args.gpus:
                    count = [f.get("value") for p in doc["probes"] for f in p["facts"] if f.get("key") == "gpu.count"]
                    if count != [args.gpus]:
                        sys.exit("the stand-in NVML did not answer for %d GPUs (gpu.count %s)" % (args.gpus, count))
        series["results"] = run_series(tools, envs, args.runs)
        series["commands"] = commands
        series["targets"] = judge(series["results"], peers)
        if args.against:
            ed, ref = series["results"][ENVDOCTOR], series["results"]["envdoctor at " + args.against]
            series["targets"]["vs " + args.against] = {
                "ratio": round(ed["wall_median_s"] / ref["wall_median_s"], 2),
                "cpu_ratio": round(ed["cpu_median_s"] / ref["cpu_median_s"], 2), "target": "<= 1x",
                "met": ed["wall_median_s"] <= ref["wall_median_s"]}
    series["load_after"] = load_average()
    saved: Dict[str, Any] = {}
    if args.save:
        if os.path.exists(args.save):
            with open(args.save) as fh:
                saved = json.load(fh)
        saved[key] = series
        with open(args.save, "w") as fh:
            json.dump(saved, fh, indent=1)
    if args.json:
        print(json.dumps(series, indent=2))
    else:
        print_series(key, series)
    if args.readme:
        write_readme(saved or {key: series})
    return 0


if __name__ == "__main__":
    sys.exit(main())
