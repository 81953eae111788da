"""``envdoctor diagnose`` with plain options runs without click (envdoctor.cli.fastpath): it must take exactly the
command lines whose every option click would read the same way, read them as click does, and leave every other
one (help, errors, the options it does not know) to click, whose texts are then the only ones a user sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import click
import pytest

from envdoctor.cli.diagnose import diagnose as diagnose_command
from envdoctor.cli.fastpath import CLICK_VARIABLES, parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ARGVS: List[List[str]] = [
    [], ["--format", "json"], ["--format=json"], ["--format", "markdown"], ["--format", "text", "--format", "json"],
    ["--format", "xml"], ["--format="], ["--format"], ["--format", "--color"], ["--format", "JSON"],
    ["-v"], ["--verbose"], ["--facts"], ["-q"], ["--quiet"], ["-v", "-q", "-v"], ["-vq"], ["--verbose=1"],
    ["--color"], ["--no-color"], ["--color", "--no-color"], ["--include-host"], ["--redact-ids"],
    ["--timeout", "3"], ["--timeout=0.1"], ["--timeout", "3600"], ["--timeout", "0.05"], ["--timeout", "3601"],
    ["--timeout", "-1"], ["--timeout", "nan"], ["--timeout", "inf"], ["--timeout", "1e3"], ["--timeout", " 5 "],
    ["--timeout", "1_0"], ["--timeout", "five"], ["--timeout"], ["--timeout", "--color"],
    ["--only", "driver"], ["--skip", "containers"], ["--check", "driver-health.secure-boot"],
    ["--python", sys.executable], ["--snapshot", "x.json"], ["--help"], ["-h"], ["--"], ["extra"], ["-x"],
    ["--formats", "json"], [""],
    ["--format", "json", "-v", "--timeout", "2.5", "--no-color", "--redact-ids", "--include-host"],
]
ENVS: List[Dict[str, str]] = [
    {}, {"ENVDOCTOR_FORMAT": "json"}, {"ENVDOCTOR_FORMAT": "markdown"}, {"ENVDOCTOR_FORMAT": "xml"},
    {"ENVDOCTOR_FORMAT": ""}, {"ENVDOCTOR_TIMEOUT": "4"}, {"ENVDOCTOR_TIMEOUT": "0"}, {"ENVDOCTOR_TIMEOUT": "nan"},
    {"ENVDOCTOR_TIMEOUT": ""}, {"ENVDOCTOR_INCLUDE_HOST": "1"}, {"ENVDOCTOR_REDACT_IDS": "yes"},
]
CLEAN = ("ENVDOCTOR_FORMAT", "ENVDOCTOR_TIMEOUT") + CLICK_VARIABLES


def _clicks(args: List[str]) -> Any:
    """diagnose's parameters as click reads ``args`` (None where click refuses them or prints help)."""
    try:
        ctx = diagnose_command.make_context("diagnose", list(args))
    except (click.exceptions.Exit, click.ClickException):
        return None
    return ctx.params


@pytest.mark.parametrize("env", ENVS, ids=lambda e: ",".join("%s=%s" % kv for kv in e.items()) or "no-variable")
@pytest.mark.parametrize("args", ARGVS, ids=lambda a: " ".join(a) or "plain")
def test_the_fast_path_reads_a_command_line_as_click_does_or_leaves_it_to_click(args, env, monkeypatch):
    for name in CLEAN:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    fast = parse(["diagnose"] + args)
    clicks = _clicks(args)
    if fast is None:
        return  # click's turn: its own parse, help and errors
    assert clicks is not None, "the fast path took a command line click refuses"
    assert clicks["only"] == clicks["skip"] == clicks["check_names"] == ()
    assert clicks["snapshot_path"] is None and clicks["python_exe"] is None
    assert {k: clicks[k] for k in fast} == fast
    assert type(clicks["timeout"]) is type(fast["timeout"])


def test_the_usual_command_lines_take_the_fast_path(monkeypatch):
    for name in CLEAN:
        monkeypatch.delenv(name, raising=False)
    for args in (["diagnose"], ["diagnose", "--format", "json"], ["diagnose", "-v"], ["diagnose", "-q"],
                 ["diagnose", "--format", "markdown", "--redact-ids"]):
        assert parse(args) is not None, args
    assert parse(["check", "--policy", "p.toml"]) is None


def _blank(text: str) -> Any:
    doc = json.loads(text)
    doc["generated"] = doc["timings"] = None
    for p in doc["probes"]:
        p["duration"] = None
        for f in p["facts"]:
            if str(f.get("source")).startswith("dir:"):
                f["source"] = None  # the interpreter's search path, which starts with how Python was started
    return doc


def test_a_live_report_is_the_same_by_either_path_and_the_fast_one_imports_no_click():
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    fast = subprocess.run([sys.executable, "-X", "importtime", "-m", "envdoctor", "diagnose", "--format", "json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    slow = subprocess.run([sys.executable, "-c", "import sys; from envdoctor.cli import main; "
                           "main(['diagnose', '--format', 'json'])"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert fast.returncode == slow.returncode
    assert _blank(fast.stdout) == _blank(slow.stdout)
    imported = [line.rsplit("|", 1)[-1].strip() for line in fast.stderr.splitlines() if "|" in line]
    assert "envdoctor.cli.fastpath" in imported and "click" not in imported
