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
    import envdoctor.probes
    from envdoctor.host import live

    def no_probe(*a, **k):
        raise AssertionError("the values given were enough: nothing is probed")

    monkeypatch.setattr(envdoctor.probes, "run_probes", no_probe)
    monkeypatch.setattr(live, "LiveHost", no_probe)
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


# -- every command takes its subject through cli.common.subject, and sees the machine diagnose sees ------------------
# The spy records every Subject made: a command that opened the snapshot (or read the report) some other way records
# none, and the test fails; the Target it recorded must be the one diagnose's report of the same snapshot gives.

SUBJECT_MACHINES = ["rocky8-4xa100-conda", "ubuntu2004-rtx3060-cuda118"]  # install targets, with GPUs and a driver
LIBS_CASE = "torch220-pip-cudnn-wheel-shadowed-by-cuda123-lib64"  # a corpus case whose snapshot holds ELF headers
LIBS_PATH = "/home/user/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so"


@pytest.fixture
def taken(monkeypatch):
    from envdoctor.cli import common

    seen = []
    real = common.Subject.__init__

    def record(self, *args, **kwargs):
        real(self, *args, **kwargs)
        seen.append(self)

    monkeypatch.setattr(common.Subject, "__init__", record)
    return seen


def _diagnosed(snap: str):
    """The Target of diagnose's own report of the snapshot (its facts read by advise.target_from_facts)."""
    from envdoctor.advise import target_from_facts

    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", snap, "--format", "json"], catch_exceptions=False)
    from envdoctor.facts import Fact, Facts

    doc = json.loads(r.output)
    return target_from_facts(Facts(Fact.from_dict(f) for p in doc["probes"] for f in p["facts"]))


def _one(taken, kind="snapshot"):
    assert [s.kind for s in taken] == [kind], "the command took its subject without cli.common.subject"
    return taken[0]


@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('schema_version = 1\n[require]\n"driver.version" = ">=1"\n')
    return str(path)


@pytest.fixture
def model(tmp_path):
    from . import fitdata

    cfg = fitdata.tiny_llama()
    return fitdata.write_model(str(tmp_path / "tiny"), cfg, [fitdata.llama_tensors(cfg)])


def _invoke(*argv: str) -> None:
    """Run a command (a refusal after it took its subject, as fit's for a machine whose GPU memory is unknown,
    still took it)."""
    r = CliRunner().invoke(cli, list(argv), catch_exceptions=False)
    assert r.exit_code in (0, 1) or (r.exit_code == 2 and "memory" in r.output), r.output


COMMANDS = {
    "diagnose": lambda snap, extra: ("diagnose", "--snapshot", snap, "--format", "json"),
    "topo": lambda snap, extra: ("topo", "--snapshot", snap, "--format", "json"),
    "advise": lambda snap, extra: ("advise", "--snapshot", snap, "--format", "json"),
    "dockerfile": lambda snap, extra: ("dockerfile", extra["dockerfile"], "--snapshot", snap, "--format", "json"),
    "install": lambda snap, extra: ("install", "cuda", "--snapshot", snap, "--dry-run", "--with-driver"),
    "fit": lambda snap, extra: ("fit", extra["model"], "--snapshot", snap, "--format", "json"),
    "check": lambda snap, extra: ("check", "--policy", extra["policy"], "--snapshot", snap, "--format", "json"),
}


@pytest.mark.parametrize("name", SUBJECT_MACHINES)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_takes_the_snapshot_diagnose_takes(command, name, taken, dockerfile, model, policy_file):
    snap = machine_path(name)
    expected = _diagnosed(snap)
    del taken[:]
    _invoke(*COMMANDS[command](snap, {"dockerfile": dockerfile, "model": model, "policy": policy_file}))
    subj = _one(taken)
    assert subj.path == snap and subj.target == expected
    assert subj.target.driver and subj.target.cc  # the machines have both: a Target of nothing proves nothing


def test_check_takes_a_report_as_its_subject(taken, policy_file, tmp_path):
    snap = machine_path(SUBJECT_MACHINES[0])
    expected = _diagnosed(snap)
    report = tmp_path / "report.json"
    report.write_text(CliRunner().invoke(cli, ["diagnose", "--snapshot", snap, "--format", "json"]).output)
    del taken[:]
    _invoke("check", "--policy", policy_file, "--report", str(report), "--format", "json")
    subj = _one(taken, "report")
    assert subj.target == expected and subj.target.driver


def test_libs_takes_the_snapshot_diagnose_takes(taken):
    import os

    from .conftest import CORPUS

    snap = os.path.join(CORPUS, LIBS_CASE, "snapshot.json")
    expected = _diagnosed(snap)
    del taken[:]
    _invoke("libs", LIBS_PATH, "--snapshot", snap, "--format", "json")
    assert _one(taken).target == expected


def test_a_report_given_as_a_snapshot_is_pointed_to_report(policy_file, tmp_path):
    report = tmp_path / "report.json"
    report.write_text(CliRunner().invoke(cli, ["diagnose", "--snapshot", machine_path(SUBJECT_MACHINES[0]),
                                               "--format", "json"]).output)
    r = CliRunner().invoke(cli, ["check", "--policy", policy_file, "--snapshot", str(report)])
    assert r.exit_code == 2 and "is a report, not a snapshot: use --report" in r.output
    r = CliRunner().invoke(cli, ["topo", "--snapshot", str(report)])  # topo takes no report: how to make a snapshot
    assert r.exit_code == 2 and "capture a snapshot" in r.output


@pytest.mark.parametrize("command", ["advise", "dockerfile", "fit", "install", "libs", "topo", "check", "diagnose"])
def test_the_subject_options_read_alike_in_every_command(command):
    from envdoctor.cli import common

    r = CliRunner().invoke(cli, [command, "--help"], terminal_width=400)
    flat = " ".join(r.output.split())
    assert common.SNAPSHOT_HELP in flat
    for option, text in (("--report", common.REPORT_HELP), ("--driver", common.DRIVER_HELP),
                         ("--gpu", common.GPU_HELP), ("--cc", common.CC_HELP)):
        if " %s " % option in flat:
            assert text in flat, (command, option)
