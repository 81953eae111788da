"""One option, one meaning (issue 15, section 2): ``--python`` is an interpreter path everywhere, each time-out
says what it bounds, and the old spellings still work for one release with a deprecation line on stderr
(never on stdout, which scripts read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.cli.fleet import fleet as fleet_cmd
from envdoctor.cli.install import install as install_cmd

from .conftest import machine_path

DEPRECATED = "is deprecated and goes away in the next release"


def _params(command, args):
    """The values a command would run with (parsing only: nothing is installed or read)."""
    with command.make_context(command.name, list(args)) as ctx:
        return ctx.params


def _run(args):
    """The command line as a user runs it: stdout and stderr apart."""
    return subprocess.run([sys.executable, "-m", "envdoctor"] + args, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, ENVDOCTOR_DOWNLOAD_TIMEOUT="", ENVDOCTOR_TIMEOUT=""))


@pytest.mark.parametrize("command,new", [(install_cmd, "--download-timeout"), (fleet_cmd, "--read-timeout")])
def test_each_time_out_is_named_for_what_it_bounds_and_the_old_name_still_works(command, new, capsys):
    base = ["cuda"] if command is install_cmd else ["reports/"]
    assert _params(command, base + [new, "7"])["timeout"] == 7
    assert _params(command, base + ["--timeout", "9"])["timeout"] == 9
    assert DEPRECATED in capsys.readouterr().err
    # Both given: the new spelling wins, whatever the order.
    assert _params(command, base + ["--timeout", "9", new, "7"])["timeout"] == 7
    assert _params(command, base + [new, "7", "--timeout", "9"])["timeout"] == 7
    helptext = CliRunner().invoke(cli, [command.name, "--help"]).output
    assert new in helptext and "--timeout" not in helptext


def test_install_old_timeout_keeps_stdout_a_clean_script():
    res = _run(["install", "cuda", "--version", "12.4", "--os", "ubuntu22.04", "--dry-run", "--timeout", "5"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("#!/usr/bin/env bash") and DEPRECATED not in res.stdout
    assert "--timeout is deprecated and goes away in the next release; use --download-timeout" in res.stderr


def test_advise_python_version_and_the_old_spelling():
    what_if = ["advise", "--driver", "470.82.01", "--cc", "3.7", "--format", "json"]
    new = _run(what_if + ["--python-version", "3.10"])
    old = _run(what_if + ["--python", "3.10"])
    assert new.returncode == old.returncode == 0, old.stderr
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert json.loads(new.stdout)["target"]["python"] == "3.10"
    assert "advise --python 3.10 is deprecated" in old.stderr and "--python-version 3.10" in old.stderr
    assert DEPRECATED not in new.stderr


def test_advise_python_is_an_interpreter_like_everywhere_else():
    """`advise --python PATH` advises for that interpreter: its version, and pip aimed at it."""
    snap = machine_path("centos7-a100-cuda115")
    res = _run(["advise", "--python", sys.executable, "--framework", "torch"])
    assert res.returncode == 0, res.stderr
    version = "%d.%d.%d" % sys.version_info[:3]
    assert "Python %s at %s" % (version, sys.executable) in " ".join(res.stdout.split())
    bad = _run(["advise", "--snapshot", snap, "--python", "/no/such/python"])
    assert bad.returncode == 2 and "no such file" in bad.stderr


def _doc_files():
    """What a user reads: README, CONTRIBUTING, docs/, the matrix's notes and the contrib/ integrations."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [os.path.join(root, n) for n in ("README.md", "CONTRIBUTING.md")]
    for top in ("docs", "contrib", os.path.join("envdoctor", "matrix")):
        for base, _, names in os.walk(os.path.join(root, top)):
            paths += [os.path.join(base, n) for n in names if not n.endswith((".json", ".pyc"))]
    return [p for p in paths if "CHANGELOG" not in os.path.basename(p)]


def test_the_docs_and_the_help_use_each_options_current_spelling():
    """A deprecated spelling (`fleet --timeout`, `install --timeout`, `advise --python X.Y`) appears in no command
    line and no command's row of the README table, nor in any command's --help: users copy what they read."""
    import re

    from envdoctor.cli import COMMANDS, LazyGroup

    texts = {}
    for path in _doc_files():
        try:
            with open(path, encoding="utf-8") as fh:
                texts[path] = fh.read()
        except UnicodeDecodeError:
            continue
    assert any(p.endswith("README.md") for p in texts)
    group = LazyGroup()
    stale = []
    for name in sorted(COMMANDS):
        command = group.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None
        texts["envdoctor %s --help" % name] = CliRunner().invoke(cli, [name, "--help"]).output
        olds = [p.opts[0] for p in command.params if (p.name or "").startswith("renamed_")]
        for old in olds:
            spelling = re.compile(r"(?<![\w-])%s(?![\w-])" % re.escape(old))
            for where, text in texts.items():
                for line in text.splitlines():
                    about = line.startswith("| `envdoctor %s" % name) or "envdoctor %s " % name in line
                    if about and spelling.search(line):
                        stale.append("%s: %s %s: %s" % (where, name, old, line.strip()[:120]))
    assert {"fleet", "install"} <= {n for n in COMMANDS if any(
        (p.name or "").startswith("renamed_") for p in group.get_command(None, n).params)}  # type: ignore
    old_python = re.compile(r"advise\b[^|\n]*--python[ =]+\d")
    for where, text in texts.items():
        stale += ["%s: %s" % (where, m.group(0)) for m in old_python.finditer(text)]
    readme = next(t for p, t in texts.items() if p.endswith("README.md"))
    advise_row = next(line for line in readme.splitlines() if line.startswith("| `envdoctor advise"))
    assert "--python-version" in advise_row and "--python PATH" in advise_row
    assert not stale, "\n".join(stale)


def test_explain_and_check_honour_envdoctor_format_and_say_so(tmp_path):
    """issue 20: `explain --format` had no help text; explain and check ignored ENVDOCTOR_FORMAT."""
    import click

    ctx = click.Context(cli)
    for name in ("explain", "check"):
        opt = next(p for p in cli.get_command(ctx, name).params if "--format" in getattr(p, "opts", ()))
        assert opt.envvar == "ENVDOCTOR_FORMAT" and opt.help and "[env: ENVDOCTOR_FORMAT]" in opt.help, name
    r = CliRunner().invoke(cli, ["explain", "driver.library_mismatch"], env={"ENVDOCTOR_FORMAT": "json"})
    assert json.loads(r.output)["code"] == "driver.library_mismatch"
    # A format this command does not have (markdown is diagnose's) means its default, from the variable only.
    r = CliRunner().invoke(cli, ["explain", "driver.library_mismatch"], env={"ENVDOCTOR_FORMAT": "markdown"})
    assert r.exit_code == 0 and r.output.startswith("driver.library_mismatch  (error)")
    policy = tmp_path / "p.toml"
    policy.write_text('schema_version = 1\n[require]\n"gpu.count" = ">=1"\n')
    r = CliRunner().invoke(cli, ["check", "--policy", str(policy), "--snapshot", machine_path("ubuntu2204-a100-mig")],
                           env={"ENVDOCTOR_FORMAT": "json"})
    assert "policy" in json.loads(r.output), r.output
