"""Which interpreter envdoctor inspects, and that every pip command it prints installs into that one.

A tool install (pipx, ``uv tool``) runs envdoctor from an environment of its own; the frameworks a user
asks about live in *their* environment. Real virtual environments are made here (no mock): the
interpreter chosen is then asked for its own ``sys`` answers like any other.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.findings import pip_for
from envdoctor.host.interpreter import choose, resolve_given

from .conftest import MACHINES

LIVE = os.path.join(os.path.dirname(__file__), "live", "h100-ubuntu2404-container", "snapshot.json.gz")


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory):
    where = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return str(where)


def test_the_active_virtual_environment_is_inspected_not_envdoctor_s_own(user_venv):
    got = choose({"VIRTUAL_ENV": user_venv}, sys.prefix)
    assert got.executable == os.path.join(user_venv, "bin", "python") and got.rule == "virtual_env"
    assert "$VIRTUAL_ENV" in got.reason
    # Active conda environment: the same rule ($VIRTUAL_ENV first when both are set).
    assert choose({"CONDA_PREFIX": user_venv}, sys.prefix)[:2] == (got.executable, "conda")
    assert choose({"VIRTUAL_ENV": user_venv, "CONDA_PREFIX": "/opt/conda"}, sys.prefix).rule == "virtual_env"
    # envdoctor's own environment active: nothing to switch to.
    assert choose({"VIRTUAL_ENV": sys.prefix}, sys.prefix).executable is None
    # A stale variable (the environment was deleted) or a relative one is not followed: envdoctor's own.
    assert choose({"VIRTUAL_ENV": user_venv + "-gone"}, sys.prefix)[:2] == (None, "own")
    assert choose({"VIRTUAL_ENV": "venv"}, sys.prefix)[:2] == (None, "own")


def test_python_names_an_interpreter_or_a_virtual_environment_directory(user_venv):
    exe = os.path.join(user_venv, "bin", "python")
    assert resolve_given(user_venv) == (exe, "")  # as pip --python takes it
    assert resolve_given(exe) == (exe, "")
    assert resolve_given(user_venv + "-gone")[0] is None
    assert resolve_given(os.path.dirname(user_venv))[0] is None  # a directory that is no environment
    assert choose({}, sys.prefix, given=exe)[1:] == ("option", "named with --python")
    assert choose({"ENVDOCTOR_PYTHON": user_venv}, sys.prefix, given=exe).rule == "env_var"
    for command in ("diagnose", "snapshot", "check", "advise", "install"):
        r = CliRunner().invoke(cli, [command, "--python", os.path.dirname(user_venv)])
        assert r.exit_code == 2 and "not a virtual environment" in r.output, (command, r.output)


def test_diagnose_says_which_interpreter_it_inspected(user_venv):
    r = CliRunner().invoke(cli, ["diagnose", "--only", "python,frameworks", "--timeout", "30"],
                           env={"VIRTUAL_ENV": user_venv, "ENVDOCTOR_PYTHON": None})
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())  # as read, whatever the wrapping
    assert "Python %d.%d.%d %s/bin/python (venv; the active virtual environment ($VIRTUAL_ENV))" % (
        sys.version_info[:3] + (user_venv,)) in text
    assert "No deep-learning framework installed for %s/bin/python" % user_venv in text


def test_pip_for_aims_every_pip_call_at_the_interpreter():
    py = "/opt/my env/bin/python"
    assert pip_for("pip install 'torch==2.4.*'", py) == "pip --python '/opt/my env/bin/python' install 'torch==2.4.*'"
    assert pip_for("pip uninstall -y onnxruntime && pip install onnxruntime-gpu", "/v/bin/python") == (
        "pip --python /v/bin/python uninstall -y onnxruntime && pip --python /v/bin/python install onnxruntime-gpu")
    assert pip_for("sudo reboot", py) == "sudo reboot"
    assert pip_for("pip install x", None) == "pip install x"
    assert pip_for("pip --python /a install x", py) == "pip --python /a install x"


def test_the_live_capture_s_pip_fixes_name_its_venv():
    """The real H100 capture inspected /opt/torch/.venv (uv-made, without pip of its own): the fix for its
    CPU-only onnxruntime must install there, through the pip on PATH."""
    import json

    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", LIVE, "--format", "json"])
    commands = [c for f in json.loads(r.output)["findings"] for c in f["fix"]["commands"] if "pip" in c]
    assert commands and all(c.startswith("pip --python /opt/torch/.venv/bin/python3 ") for c in commands), commands


def test_advise_chosen_build_first_one_line_per_reason_and_pip_aimed():
    snap = os.path.join(MACHINES, "centos7-a100-cuda115", "snapshot.json")
    out = CliRunner().invoke(cli, ["advise", "--snapshot", snap]).output
    lines = out.splitlines()
    assert max(len(ln) for ln in lines if "://" not in ln) <= 80
    chosen = [ln.split()[0] for ln in lines if ln[:1].isalpha() and not ln.startswith(("For", "Newest", "Passed"))]
    assert chosen == ["torch", "tensorflow", "jax", "onnxruntime", "cupy", "paddle"]
    assert out.index("tensorflow   2.6 (cuda11.2): pip --python /usr/bin/python3 install") < out.index("Passed over")
    # The old text said "driver 470.57.02 is older" ~25 times; now once per framework at most.
    passed = out[out.index("Passed over"):]
    for fw in ("torch", "tensorflow", "cupy", "paddle"):
        assert sum(1 for ln in passed.splitlines() if ln.startswith("  %s " % fw) and "driver" in ln) <= 1
    # The builds passed over for the driver are named as a range with a count (the range follows the matrix).
    assert re.search(r"^  torch [\d.]+ to [\d.]+ \(\d+ builds\): need a newer driver than 470\.57\.02", passed, re.M)
    # Asked-for framework first, in the order asked.
    asked = CliRunner().invoke(cli, ["advise", "--snapshot", snap, "--framework", "paddle", "--framework", "torch"])
    firsts = [ln.split()[0] for ln in asked.output.splitlines() if ln.startswith(("paddle ", "torch "))]
    assert firsts == ["paddle", "torch"]
    assert "2.12" in CliRunner().invoke(cli, ["advise", "--snapshot", snap, "-v"]).output  # every build with -v


def _pip_note(exe):
    """What `install` says when the inspected interpreter (here ``exe``, a real one) is no environment."""
    from envdoctor.cli.common import planning_facts
    from envdoctor.recipes import Request
    from envdoctor.recipes.docker_image import pip_target

    facts = planning_facts(None, 30.0, exe)
    assert facts.value("python.environment")["kind"] == "system"
    _, steps, said = pip_target(Request(component="pytorch", version=None, method="pip"), facts, "pytorch")
    assert steps and steps[0].action.argv[1:3] == ["-m", "venv"]  # a virtual environment is made either way
    return facts.value("python.environment"), " ".join(said)


def test_pep_668_is_named_only_for_an_interpreter_that_carries_the_marker():
    """A pyenv (or any self-built) interpreter is not "managed by the distribution": only one whose stdlib
    directory holds EXTERNALLY-MANAGED, outside any virtual environment, is (PEP 668)."""
    import sysconfig

    base = os.path.join(sys.base_prefix, "bin", "python%d.%d" % sys.version_info[:2])
    stdlib = sysconfig.get_path("stdlib")
    if sys.base_prefix == sys.prefix or os.path.exists(os.path.join(stdlib, "EXTERNALLY-MANAGED")):
        pytest.skip("needs envdoctor in a venv over an interpreter without PEP 668's marker (pyenv's)")
    env, note = _pip_note(base)
    assert env["externally_managed"] is False
    assert "PEP 668" not in note and "managed by" not in note and "not a virtual environment" in note
    distro = "/usr/bin/python3"
    if not os.path.exists(distro) or not any(
            os.path.exists(os.path.join(d, "EXTERNALLY-MANAGED"))
            for d in __import__("glob").glob("/usr/lib/python3*")):
        return  # this machine's distribution does not mark its Python (Debian 12 and Ubuntu 24.04 do)
    env, note = _pip_note(distro)
    assert env["externally_managed"] is True and "PEP 668" in note and "externally managed" in note


def test_python_is_one_option_with_one_help_and_one_variable_everywhere():
    """diagnose, snapshot, check, advise and install: the same --python, the same words, ENVDOCTOR_PYTHON."""
    import click

    from envdoctor.host.interpreter import ENV_VAR, HELP

    seen = {}
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        for p in command.params:
            if "--python" in getattr(p, "opts", ()):
                seen[name] = (p.help, p.envvar, p.metavar)
    assert {"diagnose", "snapshot", "check", "advise", "install"} <= set(seen), seen
    assert set(seen.values()) == {(HELP, ENV_VAR, "PATH")}
    # The help says what the option does: what it takes and the default rule.
    for words in ("virtual environment's directory", "$VIRTUAL_ENV", "$CONDA_PREFIX", "pipx", "uv tool"):
        assert words in HELP
    out = " ".join(CliRunner().invoke(cli, ["install", "--help"]).output.split())
    assert "a path to it or to a virtual environment's directory" in out
