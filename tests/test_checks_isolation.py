"""One check, one question: a check that raises costs only its own verdict.

The captured machines in tests/machines (real files and command outputs, see their README) are diagnosed
once as they are; then, for every registered check that said something on a machine, that check is made to
raise (the one thing here that is not real: a bug injected into envdoctor itself) and the machine is
diagnosed again through the CLI.  Every other check's findings must still be there, the crash must be
reported, and the exit code must stay 1 when the remaining checks found errors.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Dict, List, Tuple

import pytest
from click.testing import CliRunner

import envdoctor.checks as checks
from envdoctor.checks import CheckContext, all_checks, findings_by_check
from envdoctor.cli import cli

from .conftest import machine_names, machine_path, snapshot_facts


@functools.lru_cache(maxsize=None)
def _by_check(name: str) -> Dict[str, List[Tuple[str, str, str]]]:
    """What each registered check says on machine ``name`` (after yielding to the others, as in a run): check
    name -> [(code, severity, title)]. Once per machine and process (the cases are made of it at collection; the
    registry is the package's, as it is then: no test here reads it after swapping a check in)."""
    facts = snapshot_facts(machine_path(name))
    out: Dict[str, List[Tuple[str, str, str]]] = {}
    for check_name, found in findings_by_check(CheckContext(facts, []), all_checks()).items():
        said = [(f.code, f.severity, f.title) for f in found]
        if said:
            out[check_name] = said
    return out


def _diagnose(name: str) -> Tuple[int, Dict[str, Any]]:
    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", machine_path(name), "--format", "json"])
    return r.exit_code, json.loads(r.output)


def _broken(ctx: CheckContext) -> List[Any]:
    raise RuntimeError("injected failure")


CASES = [(m, c) for m in machine_names() for c in sorted(_by_check(m))]


def test_machines_exercise_several_checks() -> None:
    # The property below is only worth something if the machines make many checks speak.
    assert len({c for _, c in CASES}) >= 6
    # ... and on some machine one check crashes while another has found an error (the exit code must stay 1).
    assert any(len(fs) >= 2 and any(s == "error" for f in fs.values() for _, s, _ in f)
               for fs in map(_by_check, machine_names()))


@pytest.mark.parametrize("machine,crashing", CASES)
def test_a_crashing_check_hides_nothing_else(machine: str, crashing: str, monkeypatch) -> None:
    said = _by_check(machine)
    spec = checks._REGISTRY[crashing]
    monkeypatch.setitem(checks._REGISTRY, crashing, checks.CheckSpec(crashing, _broken, spec.codes))
    code, report = _diagnose(machine)
    got = [(f["code"], f["severity"], f["title"]) for f in report["findings"]]
    others = [f for name, fs in said.items() if name != crashing for f in fs]
    for f in others:
        assert f in got, "%s vanished when %s crashed" % (f, crashing)
    crashed = [f for f in report["findings"] if f["code"] == "envdoctor.check_crashed"]
    assert len(crashed) == 1 and crashing in crashed[0]["title"] and crashed[0]["severity"] == "warning"
    # exit 1 when the other checks found an error; a finding that yielded to the crashed check's now speaks (its
    # root cause is no longer told), and counts like any other
    assert code == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)
    assert code >= (1 if any(s == "error" for _, s, _ in others) else 0)


def test_exit_1_survives_a_crash_on_a_machine_with_errors(monkeypatch) -> None:
    # The issue's own measurement: a crash in one sub-check dropped the exit code from 1 to 0.
    machine = "ubuntu2404-driver-mismatch"
    code, report = _diagnose(machine)
    assert code == 1
    errors = {(f["code"], f["title"]) for f in report["findings"] if f["severity"] == "error"}
    for name in [n for n in checks._REGISTRY if n.startswith(("compat.", "driver-health"))]:
        if name != "driver-health.library-mismatch":
            monkeypatch.setitem(checks._REGISTRY, name, checks.CheckSpec(name, _broken, ()))
    code, report = _diagnose(machine)
    assert code == 1
    still = {(f["code"], f["title"]) for f in report["findings"] if f["severity"] == "error"}
    assert {e for e in errors if e[0] == "driver.library_mismatch"} <= still
    assert os.path.basename(machine_path(machine)) == "snapshot.json"
