"""One subject: every command that answers for a machine takes it one way (envdoctor.cli.common.subject): a
snapshot, this machine, or the values given, the given ones over the machine's; and the machine's values are read
from its facts in one place (envdoctor.advise.target_from_facts), which the install recipes read too.

The machines are captured snapshots (tests/machines); the Dockerfile is a one-line real image."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

from .conftest import load_machine, machine_names, machine_path, probe_facts

#: no GPU; WSL2; a RHEL rebuild with conda; a driver whose library and module disagree; several GPUs
MACHINES = ["debian12-nogpu", "wsl2-ubuntu2204-rtx4070", "rocky8-4xa100-conda", "ubuntu2404-driver-mismatch",
            "dual-socket-8xk80-pcie-switches"]
assert set(MACHINES) <= set(machine_names())


def _run(*argv: str) -> dict:
    r = CliRunner().invoke(cli, list(argv), catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.output)


@pytest.fixture
def dockerfile(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\n")
    return str(path)


@pytest.mark.parametrize("name", MACHINES)
def test_advise_and_dockerfile_see_the_same_machine_in_a_snapshot(name, dockerfile):
    snap = machine_path(name)
    advised = _run("advise", "--snapshot", snap, "--format", "json")["target"]
    host = _run("dockerfile", dockerfile, "--snapshot", snap, "--format", "json")["host"]
    assert host["from"] == "the snapshot's machine"
    assert (host["driver"], host["gpu"]) == (advised["driver"], advised["gpu"])
    assert host["compute_capabilities"][:1] == ([advised["compute_capability"]] if advised["compute_capability"]
                                                else [])


@pytest.mark.parametrize("name", MACHINES)
def test_values_given_replace_the_snapshots_alike(name, dockerfile):
    snap = machine_path(name)
    advised = _run("advise", "--snapshot", snap, "--driver", "535.104.05", "--cc", "8.0", "--format", "json")
    host = _run("dockerfile", dockerfile, "--snapshot", snap, "--driver", "535.104.05", "--cc", "8.0",
                "--format", "json")["host"]
    assert advised["target"]["driver"] == host["driver"] == "535.104.05"
    assert advised["target"]["compute_capability"] == "8.0" and host["compute_capabilities"] == ["8.0"]
    assert advised["target"]["origin"]["driver"] == "--driver"


def test_given_values_alone_probe_nothing(dockerfile, monkeypatch):
    from envdoctor.cli import common

    def no_probe(*a, **k):
        raise AssertionError("the values given were enough: nothing is probed")

    monkeypatch.setattr(common, "planning_facts", no_probe)
    advised = _run("advise", "--driver", "550.54.15", "--cc", "9.0", "--format", "json")
    host = _run("dockerfile", dockerfile, "--driver", "550.54.15", "--cc", "9.0", "--format", "json")["host"]
    assert advised["target"]["driver"] == host["driver"] == "550.54.15" and host["from"] == "the values given"


@pytest.mark.parametrize("name", MACHINES)
def test_the_install_recipes_read_the_machine_where_advise_does(name):
    from envdoctor.advise import target_from_facts
    from envdoctor.recipes import RecipeError
    from envdoctor.recipes import target_from_facts as install_target
    from envdoctor.recipes.docker_image import machine_target

    facts = probe_facts(load_machine(name))
    seen = target_from_facts(facts)
    machine = machine_target(facts)
    assert (machine.driver, machine.ccs) == (seen.driver, seen.ccs)
    try:
        system = install_target(facts)
    except RecipeError:
        return  # not an install target (the message says so); advise still answers for it
    assert (system.os_id, system.family) == (seen.os_id, seen.family)
    assert system.version == seen.version or seen.version.startswith(system.version + ".")
