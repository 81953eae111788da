#!/usr/bin/env python3
"""`envdoctor dockerfile` on megabyte-sized and hostile Dockerfiles, beside a real one.

Writes each input into a temporary directory (1 MiB of pip words, one 1 MiB word, 1 MiB of `$A`
expansions, 200,000 heredoc markers, 34,000 framework lines, 200,000 continuation lines, an ARG chain
that would expand to 1.1 GB), runs `python -m envdoctor dockerfile FILE --driver ... --cc ... --timeout T`
in a fresh process for each (median of --runs), and prints the wall time, the peak memory of the child,
the exit code and the ratio to tests/data/dockerfiles/iflame-2 (a real Dockerfile). No assertion: the
figures say whether every run ends within --timeout plus about a second (the deadline's promise).

    python scripts/bench_dockerfile.py --timeout 2 --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1024 * 1024


def inputs() -> dict:
    chain = ["FROM python:3.11-slim", "ARG A0=" + "x" * 64]
    chain += ["ARG A%d=${A%d}${A%d}${A%d}${A%d}" % (i, i - 1, i - 1, i - 1, i - 1) for i in range(1, 15)]
    head = "FROM python:3.11-slim\nARG A=1\n"
    return {
        "real (iflame-2)": open(os.path.join(ROOT, "tests", "data", "dockerfiles", "iflame-2", "Dockerfile")).read(),
        "1 MiB of pip words": head + "RUN pip install " + "a " * (MIB // 2 - 64) + "\n",
        "one 1 MiB word": head + "RUN echo " + "x" * (MIB - 64) + "\n",
        "1 MiB of $A": head + "RUN echo " + "$A" * (MIB // 2 - 64) + "\n",
        "200,000 heredocs": head + "RUN " + "<<A " * (200 * 1024) + "\n",
        "34,000 torch lines": head + "RUN pip install torch==2.4.0\n" * 34000,
        "200,000 continuations": head + "RUN a \\\n" + "b \\\n" * (200 * 1024) + "c\n",
        "ARG chain (1.1 GB)": "\n".join(chain + ["RUN echo $A14"]) + "\n",
    }


def run_once(path: str, timeout: float) -> tuple:
    cmd = [sys.executable, "-m", "envdoctor", "dockerfile", path, "--driver", "550.54.15", "--cc", "8.9",
           "--timeout", str(timeout)]
    t0 = time.monotonic()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - t0
    child.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    return wall, usage.ru_maxrss, child.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for n, (name, text) in enumerate(inputs().items()):
            path = os.path.join(tmp, "Dockerfile.%d" % n)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            results = [run_once(path, a.timeout) for _ in range(a.runs)]
            rows.append((name, len(text.encode()), statistics.median(r[0] for r in results),
                         max(r[1] for r in results), sorted({r[2] for r in results})))
    base = rows[0][2]
    print("%-24s %10s %8s %7s %10s %s" % ("input", "bytes", "seconds", "ratio", "peak KiB", "exit"))
    for name, size, wall, peak, codes in rows:
        print("%-24s %10d %8.2f %7.1f %10d %s" % (name, size, wall, wall / base, peak, codes))
    late = [r[0] for r in rows if r[2] > a.timeout + 1.0]
    print("past --timeout %g + 1 s: %s" % (a.timeout, ", ".join(late) if late else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
