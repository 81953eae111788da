"""A reader that stops on purpose (`envdoctor explain | head -1`) is not an error: exit 0, nothing on stderr.

click's own handler of a closed pipe exits 1, and before envdoctor's main() could see it; whether a run hit
it depended on when `head` closed the pipe (7 runs in 10 exited 1 for explain). Each command runs here as a
whole process writing into a real pipe whose reader takes one line and closes it, twenty times.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = 20


def _head_1(args):
    """`envdoctor ARGS | head -1`: the exit code and stderr of envdoctor."""
    p = subprocess.Popen([sys.executable, "-m", "envdoctor"] + list(args), cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    p.stderr.close()
    return p.wait(120), first, err


@pytest.mark.parametrize("args, runs", [
    (["explain"], RUNS),
    (["install", "cuda", "--version", "12.4.1", "--os", "ubuntu24.04", "--dry-run", "--format", "text"], RUNS),
    (["install", "cuda", "--version", "12.4.1", "--os", "ubuntu24.04", "--dry-run"], 5),
    (["--help"], 5),
], ids=["explain", "install-dry-run-text", "install-dry-run-sh", "help"])
def test_a_closed_pipe_exits_0_every_time(args, runs):
    results = [_head_1(args) for _ in range(runs)]
    assert all(first for _, first, _ in results)  # the reader got its line
    bad = [(rc, err.decode(errors="replace")) for rc, _, err in results if rc != 0 or err]
    assert not bad, "%d of %d runs: %r" % (len(bad), runs, bad[:3])
