"""Shared test helpers: machines are replayed through the same Host seam the tool uses."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from envdoctor.facts import Facts
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes import ProbeResult, run_probes
from envdoctor.report import Report, diagnose

try:  # property tests: no per-example time limit (a deadline is a timed assertion, and CI's 2 shared cores are noisy)
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("envdoctor", deadline=None)
    _hypothesis_settings.load_profile("envdoctor")
except ImportError:  # pragma: no cover - hypothesis is a test extra
    pass

HERE = os.path.dirname(os.path.abspath(__file__))
MACHINES = os.path.join(HERE, "machines")


def pytest_xdist_auto_num_workers(config: Any) -> int:
    """``-n auto`` (the README's test command): one test worker more than the cores this process may use. A fifth
    of the workers' time goes to waiting (a test's own deadlines, the cluster engines, chroots, a subprocess's
    start), when a worker per core leaves its core idle; on a 2-core machine, the same commit, back to back: 7:02
    with three workers (the cores busy 95% of the run) against 7:54 with two (80%)."""
    try:
        cores = len(os.sched_getaffinity(0))  # what a container's or a job's CPU set allows
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return cores + 1


def machine_path(name: str) -> str:
    return os.path.join(MACHINES, name, "snapshot.json")


def machine_names() -> List[str]:
    if not os.path.isdir(MACHINES):
        return []
    return sorted(n for n in os.listdir(MACHINES) if os.path.isfile(machine_path(n)))


def load_machine(name: str) -> SnapshotHost:
    return SnapshotHost(load_snapshot(machine_path(name)), name, validated=True)


def make_host(files: Optional[Dict[str, str]] = None, dirs: Optional[Dict[str, List[str]]] = None,
              links: Optional[Dict[str, str]] = None, commands: Optional[List[Dict[str, Any]]] = None,
              environ: Optional[Dict[str, str]] = None, nvml: Optional[Dict[str, Any]] = None,
              python: Optional[Dict[str, Any]] = None, uname: Optional[Dict[str, str]] = None,
              auto_dirs: bool = True) -> SnapshotHost:
    """A miniature machine for one test.

    ``files`` maps paths to text; with ``auto_dirs`` every parent directory
    lists its children, so ``host.exists()`` and listings agree with the files.
    ``commands`` entries need ``argv`` and may give ``stdout``, ``returncode``...
    """
    doc: Dict[str, Any] = {"schema_version": 1}
    doc["files"] = {p: {"text": t} for p, t in (files or {}).items()}
    d: Dict[str, set] = {}
    if auto_dirs:
        for p in list((files or {}).keys()) + list((links or {}).keys()):
            parts = p.strip("/").split("/")
            for i in range(len(parts)):
                parent = "/" + "/".join(parts[:i])
                d.setdefault(parent, set()).add(parts[i])
    for p, entries in (dirs or {}).items():
        d.setdefault(p, set()).update(entries)
    doc["dirs"] = {p: {"entries": sorted(e)} for p, e in d.items()}
    doc["links"] = {p: {"target": t} for p, t in (links or {}).items()}
    doc["commands"] = [dict({"returncode": 0, "stdout": "", "stderr": "", "timed_out": False}, **c)
                       for c in (commands or [])]
    doc["environ"] = environ or {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    if nvml is not None:
        doc["nvml"] = nvml
    doc["python"] = python or {"executable": "/usr/bin/python3", "version": "3.10.12", "implementation": "cpython",
                               "prefix": "/usr", "base_prefix": "/usr", "sys_path": []}
    doc["uname"] = uname or {"sysname": "Linux", "release": "5.15.0-105-generic", "version": "#115-Ubuntu SMP",
                             "machine": "x86_64"}
    return SnapshotHost(json.loads(json.dumps(doc)), "test")


def probe_facts(host) -> Facts:
    """Run every probe on ``host`` and return all their facts."""
    results: List[ProbeResult] = run_probes(host)
    return Facts(f for r in results for f in r.facts)


CORPUS = os.path.join(HERE, "corpus")


def corpus_snapshot(case: str) -> Dict[str, Any]:
    """A corpus case's snapshot as a document a test may edit before replaying it."""
    with open(os.path.join(CORPUS, case, "snapshot.json"), encoding="utf-8") as fh:
        doc: Dict[str, Any] = json.load(fh)
    return doc


def snapshot_findings(doc: Dict[str, Any], name: str = "case") -> List[Any]:
    """Every finding the checks raise on a snapshot document (probed as ``diagnose --snapshot`` probes it)."""
    from envdoctor.checks import CheckContext, run_checks

    return list(run_checks(CheckContext(probe_facts(SnapshotHost(doc, name)), [])))


def run_report(host) -> Report:
    return diagnose(host)


_PROBES: Dict[Tuple[str, int], Tuple[ProbeResult, ...]] = {}


def snapshot_probes(path: str) -> Tuple[ProbeResult, ...]:
    """Every probe's result on the snapshot file at ``path`` as captured (``path`` as the machine's description),
    probed once per test process while the file is unchanged (keyed by its path and modification time). Shared, so
    read it only (build a fresh ``Facts`` from it); a test that edits a document or patches a probe probes its own
    copy."""
    key = (os.path.abspath(path), os.stat(path).st_mtime_ns)
    if key not in _PROBES:
        _PROBES[key] = tuple(run_probes(SnapshotHost(load_snapshot(path), path, validated=True)))
    return _PROBES[key]


def snapshot_facts(path: str) -> Facts:
    """A fresh ``Facts`` of :func:`snapshot_probes`' shared results."""
    return Facts(f for r in snapshot_probes(path) for f in r.facts)


_REPORTS: Dict[Tuple[str, int], Report] = {}


def snapshot_report(path: str) -> Report:
    """The report of the snapshot file at ``path`` as captured (``diagnose --snapshot PATH``: every layer, the
    default scrubber, ``path`` as the machine's description), diagnosed once per test process while the file is
    unchanged (keyed by its path and modification time): several modules replay every machine and corpus case
    only to read what the report says. Shared, so read it only; a test that edits a document, swaps a check or
    patches a probe diagnoses its own copy."""
    key = (os.path.abspath(path), os.stat(path).st_mtime_ns)
    if key not in _REPORTS:
        _REPORTS[key] = diagnose(SnapshotHost(load_snapshot(path), path, validated=True))
    return _REPORTS[key]


@pytest.fixture
def host_factory():
    return make_host


def garbled_copy(doc: Any, data: Any, junk: Any, most: int = 3) -> Any:
    """A deep copy of the JSON document ``doc`` with 1 to ``most`` values anywhere in it (at any depth)
    replaced by values drawn from the hypothesis strategy ``junk``; ``data`` is the test's st.data()."""
    import json

    from hypothesis import strategies as st

    out = json.loads(json.dumps(doc))
    for _ in range(data.draw(st.integers(1, most))):
        path = data.draw(st.sampled_from([p for p in _json_paths(out) if p]))
        parent = out
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = data.draw(junk)
    return out


def _json_paths(node: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _json_paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _json_paths(v, path + (i,))


@pytest.fixture(autouse=True)
def _matrix_today(monkeypatch):
    """Checks that compare with a date (driver branch end of life) judge replayed machines as of the day
    the matrix was last checked (2026-11-25), so a verdict does not change with the calendar."""
    import datetime

    from envdoctor.checks import driver_branch
    from envdoctor.matrix import hardware

    monkeypatch.setattr(driver_branch, "_today", lambda: datetime.date(2026, 11, 25))
    monkeypatch.setattr(hardware, "_today", lambda: datetime.date(2026, 11, 25))


@pytest.fixture(scope="session")
def fake_lib(tmp_path_factory):
    """The fake libnvidia-ml.so.1 (tests/fakenvml), compiled once per test run with the system compiler;
    the tests that need it skip, saying why, where it cannot be built."""
    from .fakenvml.build import build

    try:
        return build(str(tmp_path_factory.mktemp("fakenvml")))
    except RuntimeError as exc:
        pytest.skip(f"cannot build the fake NVML library: {exc}")


@pytest.fixture
def no_executor(monkeypatch: Any) -> List[str]:
    """The installer's executor, every plan action's ``run``, the re-diagnosis after an install, downloads and the
    network patched to record and raise: a call that reached any of them fails the test."""
    import requests

    from envdoctor.cli import install as install_cli
    from envdoctor.install import archive, download, executor, plan

    reached: List[str] = []

    def trap(what: str) -> Any:
        def raiser(*args: Any, **kwargs: Any) -> Any:
            reached.append(what)
            raise AssertionError("the MCP server reached %s" % what)
        return raiser

    monkeypatch.setattr(executor.Executor, "__init__", trap("Executor()"))
    monkeypatch.setattr(executor.Executor, "execute", trap("Executor.execute"))
    monkeypatch.setattr(executor, "check_holds", trap("executor.check_holds"))
    for name in ("check_holds", "_run"):  # what the plan's actions run (each action's run is trapped below too)
        monkeypatch.setattr(plan, name, trap("plan." + name))
    for cls in (plan.RunCommand, plan.WriteFile, archive.Download, archive.Extract, archive.PrivateDir,
                archive.SpaceCheck, archive.Move, archive.Remove):
        monkeypatch.setattr(cls, "run", trap(cls.__name__ + ".run"))
    monkeypatch.setattr(plan.Check, "holds", trap("Check.holds"))
    monkeypatch.setattr(install_cli, "rediagnose", trap("rediagnose"))
    monkeypatch.setattr(download, "fetch_bytes", trap("fetch_bytes"))
    monkeypatch.setattr(requests.Session, "request", trap("the network"))
    return reached
