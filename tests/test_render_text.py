"""The human report as a user reads it in an 80x24 terminal: every captured machine (tests/machines, and
the real H100 capture in tests/live) rendered at 80 columns, checked against the first-screen rules.

Rules (issue 15, section 1): the verdict and the findings come first, the first ERROR within the
first 10 lines, at most 40 lines without -v (50 on an 8-GPU node), no line wider than 80 columns,
text wrapped at spaces only, one status line per layer, identical GPUs folded into one table row.
"""

from __future__ import annotations

import os
import re
import shlex

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.render.layout import shell_words, terminal_width, wrap, wrap_command
from envdoctor.render.style import Style, color_wanted

from .conftest import MACHINES, machine_names

LIVE = os.path.join(os.path.dirname(__file__), "live", "h100-ubuntu2404-container", "snapshot.json.gz")
SNAPSHOTS = {name: os.path.join(MACHINES, name, "snapshot.json") for name in machine_names()}
SNAPSHOTS["live-h100"] = LIVE
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _diagnose(snapshot, *args, env=None):
    """``envdoctor diagnose`` as a user runs it into a pipe (CliRunner's output is not a terminal)."""
    env = dict({"NO_COLOR": "", "FORCE_COLOR": "", "CLICOLOR_FORCE": "", "COLUMNS": ""}, **(env or {}))
    # Named relative to the repository, as a user in their checkout would: the report's header repeats the
    # path given, and the rules below are about envdoctor's lines, not about where the tests are checked out.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    here = os.getcwd()
    os.chdir(root)
    try:
        r = CliRunner().invoke(cli, ["diagnose", "--snapshot", os.path.relpath(snapshot, root), *args], env=env)
    finally:
        os.chdir(here)
    assert r.exit_code in (0, 1), r.output
    return r


def _json_findings(snapshot):
    import json

    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", snapshot, "--format", "json"])
    return json.loads(r.output)["findings"]


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_first_screen_rules_hold_on_every_captured_machine(name):
    r = _diagnose(SNAPSHOTS[name])
    lines = r.output.splitlines()
    findings = _json_findings(SNAPSHOTS[name])
    gpus = sum(1 for ln in lines if ln.startswith("[") and "NVIDIA GPU" in ln)
    assert len(lines) <= 40 or (gpus and len(lines) <= 50), "\n".join(lines)
    too_wide = [ln for ln in lines if len(ln) > 80]
    assert not too_wide, too_wide
    # The verdict is the first line and says what the findings say.
    errors = [f for f in findings if f["severity"] == "error"]
    warnings = [f for f in findings if f["severity"] == "warning"]
    verdict = lines[0]
    if errors:
        assert "Not ready: %d error" % len(errors) in verdict
        first = next(i for i, ln in enumerate(lines) if re.match(r"^. ERROR ", ln))
        assert first < 10, "\n".join(lines[:12])
        assert r.exit_code == 1
    elif warnings:
        assert verdict.endswith("Works, with %d warning%s" % (len(warnings), "" if len(warnings) == 1 else "s"))
        assert r.exit_code == 0
    else:
        assert verdict.endswith("No problems found") and r.exit_code == 0
    # Every error and warning is there, title whole (wrapped at spaces, never inside a word), errors first.
    words = r.output.split()
    shown = []
    for f in errors + warnings:
        title_words = f["title"].split()
        at = next((i for i in range(len(words)) if words[i:i + len(title_words)] == title_words), None)
        assert at is not None, (f["title"], r.output)
        shown.append(at)
    assert shown == sorted(shown)
    # One status line per layer, after the findings; the interpreter inspected is named.
    status = [ln for ln in lines if re.match(r"^\[.\] ", ln)]
    assert len(status) >= 8, r.output
    assert any(ln.startswith("[") and "Python" in ln and "/" in ln for ln in lines)


def test_identical_gpus_fold_into_one_table_row():
    out = _diagnose(SNAPSHOTS["centosstream9-8xh100"]).output
    table = out[out.index("GPU  Model"):].splitlines()
    assert table[0].split() == ["GPU", "Model", "CC", "Arch"]
    assert table[1].split() == ["0-7", "NVIDIA", "H100", "x8", "9.0", "Hopper"]
    assert "[✓] 8 NVIDIA GPUs (NVIDIA H100)" in out


def test_live_h100_status_lines_say_what_the_vendor_tools_said():
    """tests/live/.../vendor-tools.txt: nvidia-smi 580.159.04 / CUDA 13.0, torch 2.11.0 built for CUDA 13.0."""
    out = _diagnose(LIVE).output
    assert "[✓] Driver 580.159.04 (CUDA 13.0, open kernel module)" in out
    assert "[✓] PyTorch 2.11.0 (CUDA 13.0), torchvision 0.26.0, torchaudio 2.11.0" in out
    assert "[!] ONNX Runtime 1.30.0 (CPU build)" in out  # the one warning, on its own layer
    assert "[✓] Python 3.12.3 /opt/torch/.venv/bin/python3 (venv)" in out
    assert "    0    NVIDIA H100 80GB HBM3  9.0  Hopper  79.6 GiB" in out


def test_verbose_lists_every_fact_with_its_source():
    short = _diagnose(LIVE).output
    long = _diagnose(LIVE, "-v").output
    assert "Kernel module version" not in short and "envdoctor diagnose -v" in short
    for text in ("Kernel module version", "580.159.04", "VBIOS", "96.00.DA.00.0C", "from file:/etc/os-release",
                 "framework.cpu_only_build"):
        assert text in long, text
    timings = re.compile(r"\(\d+ ms\)|Took [0-9.]+s")
    assert timings.sub("", long) == timings.sub("", _diagnose(LIVE, "--facts").output)
    # Wider than 80 columns only where a word (a path, a URL) is longer than the value column: kept whole.
    wide = [ln for ln in long.splitlines() if len(ln) > 80]
    assert all(len(ln) - len(ln.split()[-1]) <= 40 for ln in wide), wide


def test_quiet_prints_the_findings_only():
    broken = _diagnose(SNAPSHOTS["ubuntu2404-driver-mismatch"], "-q")
    assert broken.exit_code == 1
    assert broken.output.startswith("✗ ERROR Loaded kernel module is driver 580.173.02")
    assert "[" not in broken.output.split("\n")[0] and "Next step" not in broken.output
    healthy = _diagnose(SNAPSHOTS["centosstream9-8xh100"], "--quiet")
    assert healthy.output == "" and healthy.exit_code == 0


def test_only_and_skip_choose_the_layers_and_the_exit_code_follows():
    snap = SNAPSHOTS["ubuntu2404-driver-mismatch"]
    only = _diagnose(snap, "--only", "driver,gpu")
    status = [ln for ln in only.output.splitlines() if re.match(r"^\[.\] ", ln)]
    assert [ln[:12] for ln in status] == ["[✗] Driver: ", "[?] GPUs: un"]
    assert only.exit_code == 1
    skipped = _diagnose(snap, "--skip", "driver")
    assert "✗ ERROR" not in skipped.output and skipped.exit_code == 0
    assert "No problems found" in skipped.output
    bad = CliRunner().invoke(cli, ["diagnose", "--snapshot", snap, "--only", "drivers"])
    assert bad.exit_code == 2 and "drivers: not a layer" in bad.output


@pytest.mark.parametrize("env,expected", [
    ({"FORCE_COLOR": "1"}, True), ({"CLICOLOR_FORCE": "1"}, True), ({"CLICOLOR_FORCE": "0"}, False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False), ({}, False),
])
def test_colour_into_a_pipe_follows_force_color_and_no_color(env, expected):
    r = _diagnose(SNAPSHOTS["ubuntu2404-driver-mismatch"], env=env)
    assert bool(ANSI.search(r.output)) is expected
    # Colour never changes the layout: the same lines, the same widths.
    assert ANSI.sub("", r.output) == _diagnose(SNAPSHOTS["ubuntu2404-driver-mismatch"]).output


def test_color_wanted_on_a_terminal_and_not_into_a_pipe(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    class Pipe:
        def isatty(self):
            return False

    for var in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert color_wanted(Tty()) and not color_wanted(Pipe())
    monkeypatch.setenv("TERM", "dumb")
    assert not color_wanted(Tty())
    assert Style(Pipe(), color=True).color


def test_width_is_the_terminal_s_or_80_into_a_pipe(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "120")
    assert terminal_width(Tty()) == 120
    assert terminal_width(None) == 80
    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", SNAPSHOTS["ubuntu2404-driver-mismatch"]],
                           env={"COLUMNS": "200"})
    assert max(len(ln) for ln in r.output.splitlines()) <= 80  # not a terminal: 80, whatever COLUMNS says


def test_a_long_snapshot_path_is_shortened_to_fit_not_wrapped_past_80_columns(tmp_path):
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 4)
    deep.mkdir(parents=True)
    snap = deep / "snapshot.json"
    with open(SNAPSHOTS["debian12-nogpu"], encoding="utf-8") as src:
        snap.write_text(src.read())
    lines = _diagnose(str(snap)).output.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert lines[1].strip().startswith("envdoctor report for snapshot") and "/snapshot.json" in "".join(lines[1:4])


def test_wrap_breaks_at_spaces_with_a_hanging_indent_and_never_inside_a_word():
    text = "Driver 470.57.02 supports CUDA up to 11.4; /usr/local/cuda-11.5/bin/nvcc needs a newer one"
    lines = wrap(text, 30, "! WARN  ")
    assert lines[0].startswith("! WARN  ") and all(ln.startswith(" " * 8) for ln in lines[1:])
    assert " ".join(ln.strip() for ln in lines).replace("! WARN ", "").split() == text.split()
    assert all(len(ln) <= 30 for ln in lines if "/" not in ln)
    assert "/usr/local/cuda-11.5/bin/nvcc" in "\n".join(lines)  # too long for a line: kept whole


@pytest.mark.parametrize("command", [
    "ps -eo pid,stat,cmd | awk '$2 ~ /D/'",
    "sudo dmesg -T | grep -i -E 'xid|nvrm'",
    "pip install --force-reinstall 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu126",
    "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia",
    "echo \"a b c d e f g h\" 'i j k l m n o p' q\\ r s t u v w x y z 1 2 3 4 5 6 7 8 9 10 11 12 13",
])
def test_a_wrapped_command_still_pastes_as_the_same_command(command):
    for width in (30, 44, 80):
        lines = wrap_command(command, width, "        fix: ")
        pasted = "\n".join(lines)[len("        fix: "):]
        # A shell joins "\\\n" lines; the words (quotes included) are the command's own.
        assert shlex.split(pasted.replace("\\\n", " ")) == shlex.split(command)
        assert shell_words(pasted.replace("\\\n", " ")) == shell_words(command)
        assert all(ln.endswith(" \\") for ln in lines[:-1])


def test_readme_samples_are_what_envdoctor_prints_for_the_real_capture():
    """README.md's report samples come from tests/live (a real H100): scripts/readme_samples.py --check."""
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(__file__)), "scripts", "readme_samples.py")
    res = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_framework_named_by_an_error_is_marked_on_its_own_line():
    """torch 2.5.1+cu121 on an RTX 5090 (tests/corpus, pytorch has no sm_120 code): the error concerns the GPU and
    torch, so both status lines carry the cross, not only the GPU's."""
    snap = os.path.join(os.path.dirname(MACHINES), "corpus", "torch251-cu121-rtx5090-driver590", "snapshot.json")
    lines = _diagnose(snap).output.splitlines()
    assert any(ln.startswith("[✗] PyTorch 2.5.1+cu121") for ln in lines), lines
    assert any(ln.startswith("[✗] 1 NVIDIA GPU") for ln in lines), lines
