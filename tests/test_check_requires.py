"""Checks declare the facts they need (``requires=``) and probes the facts they return (``produces=``); the
runner skips a check whose facts' probe did not finish and the report says which verdicts are missing.

The fact keys come from replaying every captured machine (tests/machines, tests/corpus, tests/live): a
required key must be one a probe really returned somewhere, and every key a probe returned must be covered
by that probe's own declaration (so the declarations cannot drift from the probes)."""

from __future__ import annotations

import copy
import glob
import os
import re
from typing import Dict, Set

import pytest

from envdoctor.checks import CheckContext, all_checks, run_checks
from envdoctor.facts import Facts
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes import all_probes, producers_of, run_probes
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOTS = sorted(glob.glob(os.path.join(ROOT, "tests", "machines", "*", "snapshot.json"))
                   + glob.glob(os.path.join(ROOT, "tests", "corpus", "*", "snapshot.json"))
                   + glob.glob(os.path.join(ROOT, "tests", "live", "*", "snapshot.json.gz")))


def _general(key: str) -> str:
    return re.sub(r"\.\d+(?=\.|$)", ".N", key)  # gpu.3.name -> gpu.N.name


@pytest.fixture(scope="module")
def produced() -> Dict[str, Set[str]]:
    """Every fact key each probe returned on the captured machines (GPU indexes as N)."""
    out: Dict[str, Set[str]] = {}
    for path in SNAPSHOTS:
        for res in run_probes(SnapshotHost(load_snapshot(path), path, validated=True), parallel=False):
            out.setdefault(res.name, set()).update(_general(f.key) for f in res.facts)
    return out


def test_there_are_captured_machines_to_learn_the_keys_from(produced):
    assert len(SNAPSHOTS) > 20 and {s.name for s in all_probes()} <= set(produced)


def test_every_check_declares_the_facts_it_needs():
    undeclared = [s.name for s in all_checks() if s.requires is None]
    assert not undeclared, ("checks without requires= (the facts they cannot judge without; () for a check "
                            "that judges missing facts itself): %s" % ", ".join(undeclared))


def _covers(required: str, key: str) -> bool:
    want, have = required.split("."), key.split(".")
    return len(want) == len(have) and all(w in ("*", h) for w, h in zip(want, have))


def test_every_required_fact_is_one_a_single_probe_returns_on_some_machine(produced):
    every = {k for keys in produced.values() for k in keys}
    for spec in all_checks():
        for key in spec.requires or ():
            owners = producers_of(key)
            assert len(owners) == 1, "%s requires %s: declared by %s" % (spec.name, key, owners or "no probe")
            assert any(_covers(key, k) for k in produced[owners[0]]), (
                "%s requires %s, which the %s probe returned on no captured machine (of %s)"
                % (spec.name, key, owners[0], sorted(k for k in every if k.split(".")[0] == key.split(".")[0])))


def test_every_fact_a_probe_returns_is_in_its_own_declaration(produced):
    for name, keys in produced.items():
        for key in keys:
            assert producers_of(key) == [name], "%s returns %s, declared by %s" % (name, key, producers_of(key))


def _hung(machine: str, path: str) -> SnapshotHost:
    """``machine`` replayed with ``path`` still being read when the live run's time limit came."""
    doc = load_snapshot(os.path.join(ROOT, "tests", "machines", machine, "snapshot.json"))
    hung = copy.deepcopy(doc)
    assert path in hung["files"]
    hung["files"][path] = {"error": "ETIMEDOUT", "message": "still being read when the time limit came"}
    return SnapshotHost(hung, machine)


def test_a_timed_out_driver_probe_says_which_verdicts_are_missing_instead_of_passing_them():
    # The 550 kernel module with 535 user-space libraries: replayed whole, a library mismatch error.
    whole = diagnose(SnapshotHost(load_snapshot(os.path.join(
        ROOT, "tests", "machines", "ubuntu2404-driver-mismatch", "snapshot.json")), "m"),
        scrubber=Scrubber(include_host=True))
    assert "driver.library_mismatch" in {f.code for f in whole.findings}
    report = diagnose(_hung("ubuntu2404-driver-mismatch", "/proc/driver/nvidia/version"),
                      scrubber=Scrubber(include_host=True))
    assert {p.name: p.status for p in report.probes}["driver"] == "timed_out"
    (late,) = [f for f in report.findings if f.code == "envdoctor.probe_timed_out"]
    assert "Not checked without them" in late.detail and "driver.too_old_for_toolkit" in late.detail
    # No driver verdict is drawn from a driver layer that never finished.
    driver_codes = {d.code for s in all_checks() if "driver.installed" in (s.requires or ()) for d in s.codes}
    assert not driver_codes & {f.code for f in report.findings}


def test_a_check_whose_probe_did_not_run_is_skipped_and_the_report_says_so():
    host = SnapshotHost(load_snapshot(os.path.join(ROOT, "tests", "machines", "ubuntu2404-driver-mismatch",
                                                   "snapshot.json")), "m")
    probes = [r for r in run_probes(host, parallel=False) if r.name != "driver"]
    found = run_checks(CheckContext(Facts(f for r in probes for f in r.facts), probes))
    skipped = [f for f in found if f.code == "envdoctor.checks_skipped"]
    assert len(skipped) == 1 and "driver" in skipped[0].title and skipped[0].severity == "info"
    assert "driver.library_mismatch" in skipped[0].detail


def test_facts_handed_in_without_probe_records_are_judged_as_they_are():
    host = SnapshotHost(load_snapshot(os.path.join(ROOT, "tests", "machines", "ubuntu2404-driver-mismatch",
                                                   "snapshot.json")), "m")
    facts = Facts(f for r in run_probes(host, parallel=False) for f in r.facts)
    assert "driver.library_mismatch" in {f.code for f in run_checks(CheckContext(facts, []))}
