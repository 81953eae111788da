"""The early probe worker of `diagnose` (envdoctor/early.py): the report is the same with it as
without it, and whatever happens to the worker the user still gets a report, in time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from envdoctor import early
from envdoctor.probes import PROBE_MODULES, ProbeResult, run_probes

from .conftest import load_machine, machine_names

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _comparable(stdout: str) -> dict:
    doc = json.loads(stdout)
    doc.pop("generated")
    doc.pop("timings")
    for p in doc["probes"]:
        p.pop("duration")
    return doc


def _diagnose(args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json"] + list(args),
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.parametrize("args,expected", [
    (["diagnose"], True),
    (["diagnose", "--format", "json", "-v", "--timeout", "3"], True),
    (["diagnose", "--snapshot", "node.json"], False),
    (["diagnose", "--snapshot=node.json"], False),
    (["diagnose", "--help"], False),
    (["diagnose", "-h"], False),
    (["snapshot", "-o", "x.json"], False),
    (["install", "cuda", "--dry-run"], False),
    (["--version"], False),
    ([], False),
])
def test_worker_only_for_a_live_diagnose(args, expected):
    assert early.wants_worker(args, environ={}) is expected
    assert early.wants_worker(args, environ={early.DISABLE_VAR: "1"}) is False


def test_split_covers_every_probe_once():
    parent = early.parent_modules()
    assert sorted(parent + list(early.WORKER_MODULES)) == sorted(PROBE_MODULES)
    assert not set(parent) & set(early.WORKER_MODULES)


@pytest.mark.parametrize("name", machine_names())
def test_probe_results_survive_the_trip_from_the_worker(name):
    # What the worker sends is to_dict() as JSON; every captured machine's results come back equal
    # (a tuple turned into a list, a lost field or status would show here).
    results = run_probes(load_machine(name))
    back = [ProbeResult.from_dict(d) for d in json.loads(json.dumps([r.to_dict() for r in results]))]
    for a, b in zip(results, back):
        assert (a.name, a.title, a.status, a.error) == (b.name, b.title, b.status, b.error)
        assert a.facts == b.facts


def test_the_report_is_the_same_with_and_without_the_worker():
    with_worker = _diagnose(["--redact-ids"])
    without = _diagnose(["--redact-ids"], env=dict(os.environ, ENVDOCTOR_NO_PREFORK="1"))
    assert with_worker.returncode == without.returncode and with_worker.returncode in (0, 1), with_worker.stderr
    a, b = _comparable(with_worker.stdout), _comparable(without.stdout)
    assert [p["name"] for p in a["probes"]] == [p["name"] for p in b["probes"]]
    assert a == b
    assert all(p["status"] == "ok" for p in a["probes"]), a["probes"]


def _with_patched_worker(patch: str, extra_args=(), env=None):
    """Run `envdoctor diagnose` through the real launcher, with the worker's job replaced."""
    script = textwrap.dedent("""
        import os, sys, time
        from envdoctor import early
        def mark():
            open(os.environ["MARK"], "w").close()
        %s
        from envdoctor.launcher import main
        main(["diagnose", "--format", "json"] + %r)
    """) % (textwrap.dedent(patch), list(extra_args))
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env=env)
    return r, time.monotonic() - start


@pytest.mark.parametrize("patch", [
    # dies without a word
    "early._run_job = lambda job: (mark(), os._exit(3))",
    # is killed by a signal (as a crash inside a C library would)
    "early._run_job = lambda job: (mark(), os.kill(os.getpid(), 9))",
    # answers garbage
    "early._run_job = lambda job: (mark(), b'{not json')[1]",
    # answers well-formed JSON of the wrong shape
    "early._run_job = lambda job: (mark(), b'{\"protocol\": 1, \"probes\": [{\"name\": 3}]}')[1]",
    # fails while warming up
    "def _boom():\n    mark()\n    raise ImportError('simulated')\nearly._warm_up = _boom",
])
def test_a_failed_worker_costs_nothing_but_time(patch, tmp_path):
    marker = tmp_path / "worker-ran"
    r, _ = _with_patched_worker(patch, env=dict(os.environ, MARK=str(marker)))
    assert marker.exists()  # the failure really happened in a worker
    reference, _ = _with_patched_worker("", env=dict(os.environ, ENVDOCTOR_NO_PREFORK="1"))
    assert r.returncode == reference.returncode, r.stderr
    assert "Traceback" not in r.stderr
    assert _comparable(r.stdout) == _comparable(reference.stdout)


def test_a_hung_worker_is_killed_and_its_probes_reported_timed_out():
    r, elapsed = _with_patched_worker("early._run_job = lambda job: time.sleep(60) or b''", ["--timeout", "1"])
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    status = {p["name"]: p["status"] for p in doc["probes"]}
    assert status["os"] == status["gpu"] == status["cuda"] == "timed_out"
    assert status["frameworks"] == status["containers"] == "ok"  # the parent's own half still ran
    assert "probe worker" in next(p["error"] for p in doc["probes"] if p["name"] == "cuda")
    assert elapsed < 1 + 2.5, elapsed


def test_an_unused_worker_does_not_hold_the_callers_pipe():
    # A bad option ends the run before the worker gets its job: it must be gone at once, or a
    # caller reading our output until EOF would wait for it.
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--no-such-option"],
                       capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 2 and "no-such-option" in r.stderr
    assert time.monotonic() - start < 10
