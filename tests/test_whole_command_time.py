"""The whole command, start-up included, ends within --timeout + 1 s, however the driver behaves.

Measured from outside, as a caller (cron, Slurm's prolog, an ssh loop) sees it: the wall time of a whole
``python -m envdoctor ...`` process, from before the fork to its exit and the end of its output pipes, on a
machine whose NVML hangs (the fake libnvidia-ml.so.1 of tests/fakenvml, built here; answers of a real H100,
tests/fakenvml/h100.json).  The interpreter's start-up and envdoctor's imports are inside the budget: a live
run counts its --timeout from the process's start (envdoctor/launcher.py), so no allowance is made for them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from .fakenvml.build import fake_env, load_answers, write_answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIVE = os.path.join(ROOT, "tests", "live", "h100-ubuntu2404-container", "snapshot.json.gz")
TIMEOUT = 2



@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("policy") / "policy.toml")
    r = subprocess.run([sys.executable, "-m", "envdoctor", "policy", "init", "--from", LIVE, "-o", path],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    return path


HANGS = {"init": {"init.hang_seconds": 60},  # nvmlInit never returns
         "late call": {"device.0.temperature.hang_seconds": 60}}  # one of the last calls asked of a GPU
COMMANDS = [(("diagnose",), "init"), (("diagnose", "--format", "json"), "late call"),
            (("snapshot", "-o", "-"), "init"), (("advise",), "init"), (("check", "--policy", "POLICY"), "late call")]


@pytest.mark.parametrize("command,hang", COMMANDS, ids=[" ".join(c[:1] + c[1:2]) + " / " + h for c, h in COMMANDS])
def test_the_whole_command_ends_within_its_timeout_plus_a_second(fake_lib, policy, tmp_path, command, hang):
    answers = dict(load_answers("h100.json"), **HANGS[hang])
    env = fake_env(fake_lib, write_answers(answers, str(tmp_path / "answers.txt")))
    argv = [policy if a == "POLICY" else a for a in command] + ["--timeout", str(TIMEOUT)]
    start = time.monotonic()
    # capture_output: the run is over only when its output pipes close, which a child left holding them
    # would delay.
    r = subprocess.run([sys.executable, "-m", "envdoctor"] + argv, env=env, capture_output=True, cwd=ROOT,
                       timeout=60)
    took = time.monotonic() - start
    assert b"Traceback" not in r.stderr, r.stderr
    assert r.returncode in (0, 1), (r.returncode, r.stderr)
    assert took < TIMEOUT + 1.0, "%s took %.2f s with --timeout %d" % (" ".join(argv), took, TIMEOUT)
    if command[0] == "diagnose":
        assert b"driver.nvml_hung" in r.stdout or b"hung" in r.stdout


def test_a_slow_start_up_is_inside_the_budget_not_added_to_it(fake_lib, tmp_path):
    """A start-up slowed by 0.9 s (a site hook, a cold disk, a loaded node: here a ``sitecustomize`` that
    sleeps) still ends within --timeout + 1 s: the time is counted from the process's start."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import time\ntime.sleep(0.9)\n")
    answers = dict(load_answers("h100.json"), **HANGS["init"])
    env = fake_env(fake_lib, write_answers(answers, str(tmp_path / "answers.txt")))
    env["PYTHONPATH"] = str(site) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json", "--timeout", str(TIMEOUT)],
                       env=env, capture_output=True, cwd=ROOT, timeout=60)
    took = time.monotonic() - start
    assert r.returncode == 1 and b"driver.nvml_hung" in r.stdout, r.stderr
    assert took < TIMEOUT + 1.0, took


def test_a_library_caller_counts_from_its_own_call():
    from envdoctor.clock import process_started

    assert process_started(10.0) is None  # pytest's own process is not the command line
