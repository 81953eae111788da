"""What ``advise`` recommends, ``install`` accepts: on every captured machine (tests/machines, tests/live,
tests/corpus: snapshots of real machines, each folder's README says where it came from) and for every framework
``install`` installs, advise's recommendation, installed as its own line says (``envdoctor install COMPONENT
--version V --option cuda=C --dry-run``), passes install's pre-flight (the checks' verdict on the machine after the
plan, :mod:`envdoctor.preflight`), or advise says no build fits.

Both commands run as a user runs them, through the command line on the snapshot. A machine install does not
target (its system is not one of the recipes') is planned for ``--os ubuntu22.04``: the pre-flight judges the
snapshot's facts all the same."""

from __future__ import annotations

import glob
import json
import os
from typing import Dict, List, Optional, Tuple

import pytest
from click.testing import CliRunner

from envdoctor import frameworks
from envdoctor.cli import cli
from envdoctor.recipes.framework import lowest

HERE = os.path.dirname(os.path.abspath(__file__))
#: what install's pre-flight says when it refuses a plan (envdoctor.preflight.refusal)
REFUSED = "`envdoctor diagnose` would report"


def _snapshots() -> List[str]:
    found: List[str] = []
    for pattern in ("machines/*/snapshot.json", "live/*/snapshot.json*", "corpus/*/snapshot.json"):
        found += sorted(glob.glob(os.path.join(HERE, pattern)))
    return found


def _line(component: str, answer: Dict[str, str]) -> List[str]:
    """The install options that name advise's build (its release and CUDA variant)."""
    if component == "pytorch":
        return ["--version", answer["release"], "--option", "cuda=" + answer["cuda"]]
    if component == "jax":
        return ["--version", lowest(answer["release"]), "--option", "cuda=" + answer["variant"][len("cuda"):]]
    return ["--version", answer["release"]]


def _install(snapshot: str, component: str, options: List[str]) -> Tuple[int, str]:
    runner = CliRunner()
    argv = ["install", component, "--snapshot", snapshot, "--dry-run"] + options
    result = runner.invoke(cli, argv)
    if result.exit_code == 2 and "is not a supported install target" in result.output:
        result = runner.invoke(cli, argv + ["--os", "ubuntu22.04"])
    return result.exit_code, result.output


def _advised(snapshot: str) -> Dict[str, Optional[Dict[str, str]]]:
    result = CliRunner().invoke(cli, ["advise", "--snapshot", snapshot, "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    return {f["framework"]: f if f.get("command") else None for f in doc.get("frameworks", [])}


@pytest.mark.slow
@pytest.mark.parametrize("snapshot", _snapshots(), ids=lambda p: os.path.relpath(p, HERE))
def test_advise_recommends_only_builds_install_accepts(snapshot):
    advised = _advised(snapshot)
    for component, name in sorted(frameworks.RECIPES.items()):
        answer = advised.get(name)
        if answer is None:
            continue  # no GPU (advise gives CPU builds), or advise says no build fits
        code, output = _install(snapshot, component, _line(component, answer))
        if "driver unknown: not checked against the driver" in answer["notes"]:
            # no driver on the machine: advise answers for the driver to come; install refuses for the driver
            # alone, naming the ways to bring it
            if REFUSED in output:
                assert all(line.split()[1].startswith("driver.") for line in output.splitlines()
                           if line.startswith("  ERROR ")), output
                assert "envdoctor install driver" in output, output
                continue
        assert REFUSED not in output, "advise recommends %s %s (%s); install refuses it:\n%s" % (
            name, answer["release"], answer["variant"], output)
        assert code == 0, "advise recommends %s %s (%s); install says:\n%s" % (
            name, answer["release"], answer["variant"], output)


MIXED = os.path.join(HERE, "corpus", "b4-2x-rtx5090-nccl2251-too-old-for-blackwell-maxsharedmem", "snapshot.json")
