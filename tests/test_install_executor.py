"""Executor semantics, shell rendering and input validation of ``envdoctor install``.

The plans here only touch a temporary directory; their commands are real
programs (mkdir, sh, false) run for real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import List

import pytest
from click.testing import CliRunner

from envdoctor.cli.install import install
from envdoctor.install import validate
from envdoctor.install.archive import Remove
from envdoctor.install.executor import Executor
from envdoctor.install.plan import (
    Plan,
    RunCommand,
    Step,
    WriteFile,
    exists,
    has_content,
    render_sh,
)
from envdoctor.install.validate import ValidationError


def small_plan(root: str, fail_at_second: bool = False, needs_root: bool = False) -> Plan:
    a, b = os.path.join(root, "a dir"), os.path.join(root, "b.txt")
    second = RunCommand(["false"]) if fail_at_second else RunCommand(["sh", "-c", "echo hello > \"$1\"", "sh", b])
    return Plan(title="demo plan", component="cuda", version="12.4.1", method="redist", target="linux-x86_64",
                steps=[Step("make-a", "make a directory", RunCommand(["mkdir", "-p", a]), needs_root=needs_root,
                            done_if=[exists(a)], verify=[exists(a)]),
                       Step("write-b", "write b", second, done_if=[has_content(b, "hello\n")]),
                       Step("write-c", "write c with a quote's \"worth\" of $HOME",
                            WriteFile(os.path.join(a, "c.json"), '{"x": "it\'s $HOME `id`"}\n', 0o600),
                            done_if=[has_content(os.path.join(a, "c.json"), '{"x": "it\'s $HOME `id`"}\n')])],
                resume_command="envdoctor install cuda --version 12.4.1 --prefix /x --yes")


def executor(tmp_path, lines: List[str], **kw) -> Executor:
    kw.setdefault("yes", True)
    kw.setdefault("uid", lambda: 1000)
    return Executor(lines.append, log_path=str(tmp_path / "logs" / "install.log"), **kw)


def test_runs_every_step_and_logs_each_with_time_and_outcome(tmp_path):
    lines: List[str] = []
    result = executor(tmp_path, lines).execute(small_plan(str(tmp_path)))
    assert result.exit_code == 0
    assert (tmp_path / "b.txt").read_text() == "hello\n"
    c = tmp_path / "a dir" / "c.json"
    assert c.read_text() == '{"x": "it\'s $HOME `id`"}\n' and oct(c.stat().st_mode & 0o777) == "0o600"
    log = (tmp_path / "logs" / "install.log").read_text().splitlines()
    assert any("step make-a: done in" in ln for ln in log) and any("step write-c: done in" in ln for ln in log)
    assert all(ln[:4].isdigit() and "T" in ln[:19] for ln in log)  # each line starts with an ISO time
    assert lines[0] == "Log: %s" % (tmp_path / "logs" / "install.log")


def test_rerun_skips_steps_already_done(tmp_path):
    executor(tmp_path, []).execute(small_plan(str(tmp_path)))
    lines: List[str] = []
    result = executor(tmp_path, lines).execute(small_plan(str(tmp_path)))
    assert [o.status for o in result.outcomes] == ["skipped", "skipped", "skipped"]
    assert any("[2/3] write b: skipped (already done)" in ln for ln in lines)


def test_first_failure_stops_with_what_why_and_the_resume_command(tmp_path):
    lines: List[str] = []
    result = executor(tmp_path, lines).execute(small_plan(str(tmp_path), fail_at_second=True))
    assert result.exit_code == 1
    assert [o.status for o in result.outcomes] == ["done", "failed", "not_run"]
    assert "step 2 of 3 failed: write b" in result.message
    assert "false: exit code 1" in result.message
    assert "envdoctor install cuda --version 12.4.1 --prefix /x --yes" in result.message
    assert not (tmp_path / "a dir" / "c.json").exists()  # nothing after the failure ran
    assert "FAILED" in (tmp_path / "logs" / "install.log").read_text()


def test_missing_program_fails_the_step_clearly(tmp_path):
    plan = Plan("p", "cuda", "1", "redist", "t", steps=[Step("x", "run it", RunCommand(["envdoctor-no-such-tool"]))])
    result = executor(tmp_path, []).execute(plan)
    assert result.exit_code == 1 and "envdoctor-no-such-tool: not installed" in result.message


def test_root_needed_and_missing_is_refused_before_anything_runs(tmp_path):
    lines: List[str] = []
    result = executor(tmp_path, lines, uid=lambda: 1000).execute(small_plan(str(tmp_path), needs_root=True))
    assert result.exit_code == 2
    assert "needs root (steps: make-a)" in lines[0]
    assert not (tmp_path / "a dir").exists() and not (tmp_path / "logs").exists()
    assert executor(tmp_path, [], uid=lambda: 0).execute(small_plan(str(tmp_path), needs_root=True)).exit_code == 0


def test_no_yes_and_no_terminal_refuses(tmp_path):
    lines: List[str] = []
    result = executor(tmp_path, lines, yes=False, interactive=False).execute(small_plan(str(tmp_path)))
    assert result.exit_code == 2 and "pass --yes" in lines[0]
    assert not (tmp_path / "a dir").exists()


def test_confirmation_is_asked_and_a_no_changes_nothing(tmp_path):
    asked: List[str] = []

    def say_no(q: str) -> bool:
        asked.append(q)
        return False

    result = executor(tmp_path, [], yes=False, interactive=True, confirm=say_no).execute(small_plan(str(tmp_path)))
    assert result.exit_code == 2 and asked == ["Run these 3 steps (demo plan)?"]
    assert not (tmp_path / "a dir").exists()
    result = executor(tmp_path, [], yes=False, interactive=True, confirm=lambda q: True).execute(
        small_plan(str(tmp_path)))
    assert result.exit_code == 0 and (tmp_path / "b.txt").exists()


def test_reboot_and_mok_enrolment_are_said_loudly_at_the_end(tmp_path):
    plan = small_plan(str(tmp_path))
    plan.reboot_required = plan.mok_enrolment = True
    lines: List[str] = []
    executor(tmp_path, lines).execute(plan)
    assert lines[-1].startswith("!!!!") and "MOK ENROLMENT NEEDED" in lines[-2] and "REBOOT REQUIRED" in lines[-2]


def test_remove_step_deletes_a_tree(tmp_path):
    d = tmp_path / "staging" / "x"
    d.mkdir(parents=True)
    plan = Plan("p", "cuda", "1", "redist", "t", steps=[Step("rm", "clean", Remove(str(tmp_path / "staging")))])
    assert executor(tmp_path, []).execute(plan).exit_code == 0 and not (tmp_path / "staging").exists()


# -- the rendered script runs as-is ----------------------------------------------
@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("sha256sum") is None, reason="needs bash/coreutils")
def test_rendered_script_runs_with_bash_and_skips_on_rerun(tmp_path):
    root = str(tmp_path / "work")
    os.mkdir(root)
    script = render_sh(small_plan(root))
    assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
    assert "# [2/3] write b" in script
    path = tmp_path / "plan.sh"
    path.write_text(script)
    first = subprocess.run(["bash", str(path)], capture_output=True, text=True, timeout=30)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "work" / "b.txt").read_text() == "hello\n"
    assert (tmp_path / "work" / "a dir" / "c.json").read_text() == '{"x": "it\'s $HOME `id`"}\n'
    second = subprocess.run(["bash", str(path)], capture_output=True, text=True, timeout=30)
    assert second.returncode == 0 and second.stdout.count("skip (already done)") == 3


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("sha256sum") is None, reason="needs bash/coreutils")
def test_rendered_script_verifies_downloads_with_sha256sum(tmp_path):
    from envdoctor.install.archive import Download
    from envdoctor.install.plan import has_sha256

    src = tmp_path / "archive.tar.xz"
    src.write_bytes(b"payload")
    good = "239f59ed55e737c77147cf55ad0c1b030b6d7ee748a7426952f9b852d5a935e5"  # sha256 of b"payload"
    dest = str(tmp_path / "dl" / "archive.tar.xz")
    for digest, rc in ((good, 0), ("0" * 64, 1)):
        plan = Plan("p", "cuda", "1", "redist", "t", steps=[
            Step("dl", "download", Download("file://%s" % src, dest, digest, 7), done_if=[has_sha256(dest, digest)])])
        if shutil.which("curl") is None:
            pytest.skip("needs curl")
        out = subprocess.run(["bash", "-c", render_sh(plan)], capture_output=True, text=True, timeout=30)
        assert out.returncode == rc, out.stderr
        assert os.path.exists(dest) == (rc == 0)
        assert not os.path.exists(dest + ".part")  # a mismatching download is deleted, never kept
        if rc == 0:
            os.remove(dest)


def test_root_plan_script_refuses_non_root_first():
    plan = small_plan("/nonexistent", needs_root=True)
    script = render_sh(plan)
    assert script.index('if [ "$(id -u)" -ne 0 ]') < script.index("# [1/3]")


# -- validation of user input --------------------------------------------------
@pytest.mark.parametrize("value", ["12.4; rm -rf /", "12.4 ", "$(id)", "12.4.1-rc1", "latest", "", "12..4", "-1"])
def test_hostile_or_malformed_versions_are_refused(value):
    if value == "12.4 ":  # surrounding blanks are harmless and stripped
        assert str(validate.version(value)) == "12.4"
        return
    with pytest.raises(ValidationError, match="not a release number"):
        validate.version(value)


@pytest.mark.parametrize("value,message", [
    ("/opt/cuda\n--force", "control characters"), ("", "empty"), ("/", "system directory"),
    ("/usr", "system directory"), ("//usr/", "system directory"),
])
def test_bad_prefixes_are_refused(value, message):
    with pytest.raises(ValidationError, match=message):
        validate.prefix(value)


def test_relative_and_home_prefixes_are_made_absolute():
    assert validate.prefix("cuda-12.4", cwd="/scratch/u") == "/scratch/u/cuda-12.4"
    assert validate.prefix("~/cuda").startswith("/") and validate.prefix("~/cuda").endswith("/cuda")
    assert validate.prefix("/scratch/u/../u/cuda/") == "/scratch/u/cuda"


@pytest.mark.parametrize("value", ["ftp://mirror/cuda", "file:///srv/cuda", "mirror.example.org/cuda",
                                   "https://", "https://m.example.org/cuda redist", "https://m/x?y=1"])
def test_bad_mirrors_are_refused(value):
    with pytest.raises(ValidationError):
        validate.mirror(value)


def test_good_mirror_loses_its_trailing_slash():
    assert validate.mirror("https://mirror.example.org/compute/cuda/redist/") == \
        "https://mirror.example.org/compute/cuda/redist"


@pytest.mark.parametrize("args,message", [
    (["--version", "12.4; rm -rf /", "--prefix", "/scratch/cuda"], "is not a release number"),
    (["--version", "12.4.1", "--prefix", "/scratch/cuda\nx"], "control characters"),
    (["--version", "12.4.1", "--prefix", "/scratch/cuda", "--mirror", "ftp://x/y"], "must be an http"),
    (["--version", "12.4.1", "--prefix", "/scratch/cuda", "--components", "cuda_nvcc;id"], "not a redist component"),
    (["--version", "12.4.1", "--prefix", "/scratch/cuda", "--platform", "linux-x86_64 -rf"], "platform"),
    (["--version", "12.4.1", "--method", "redist"], "--prefix is required"),
])
def test_cli_refuses_hostile_values_with_exit_2_before_any_network(args, message, monkeypatch):
    import envdoctor.install.download as dl

    def no_network(*a, **k):
        raise AssertionError("must not reach the network")

    monkeypatch.setattr(dl, "fetch_bytes", no_network)
    res = CliRunner().invoke(install, ["cuda"] + args + ["--dry-run"])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output


def test_cli_without_yes_and_without_a_terminal_refuses(tmp_path, monkeypatch):
    import envdoctor.install.download as dl

    doc = {"release_label": "12.4.1", "release_product": "cuda", "cuda_cudart": {
        "name": "CUDA Runtime (cudart)", "license": "CUDA Toolkit", "version": "12.4.127", "linux-x86_64": {
            "relative_path": "cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-12.4.127-archive.tar.xz",
            "sha256": "0483bff9a36e7a44465db3cd42874f6f70f019297dcf803fbefcbf58d7448c8f", "size": "1099680"}}}
    monkeypatch.setattr(dl, "fetch_bytes", lambda url, opts=None: json.dumps(doc).encode())
    prefix = str(tmp_path / "cuda")
    res = CliRunner().invoke(install, ["cuda", "--version", "12.4.1", "--prefix", prefix, "--platform",
                                       "linux-x86_64", "--log-file", str(tmp_path / "l.log")])
    assert res.exit_code == 2 and "pass --yes" in res.output
    assert not os.path.exists(cuda_staging(prefix))


def cuda_staging(prefix: str) -> str:
    from envdoctor.recipes.cuda_redist import staging_dir

    return staging_dir(prefix)


def _fake_conda(tmp_path, envs: List[str]) -> str:
    """A `conda` that answers `env list --json` (as conda 24 prints it) and logs every other call."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    listing = json.dumps({"envs": envs}, indent=2)
    prog = bindir / "conda"
    prog.write_text("#!/bin/sh\nif [ \"$1 $2 $3\" = 'env list --json' ]; then\ncat <<'EOF'\n%s\nEOF\nexit 0\nfi\n"
                    "echo \"$@\" >> %s\n" % (listing, tmp_path / "conda-calls.log"))
    prog.chmod(0o755)
    return str(bindir)


@pytest.mark.parametrize("existing", [True, False])
def test_conda_create_never_runs_over_an_existing_environment(tmp_path, monkeypatch, existing):
    # `conda create -y -n NAME` deletes an existing NAME first: the recipes' creation step is skipped
    # when conda lists it, by the executor and by the rendered script alike.
    from envdoctor.recipes.docker_image import PipInstall, conda_steps

    envs = ["/opt/conda"] + (["/home/ana/miniconda3/envs/envdoctor-torch"] if existing else [])
    monkeypatch.setenv("PATH", _fake_conda(tmp_path, envs) + os.pathsep + os.environ["PATH"])
    steps = conda_steps("envdoctor-torch", "3.11", PipInstall(("torch==2.4.1",)), "torch")
    plan = Plan(title="t", component="pytorch", version="2.4.1", method="conda", target="ubuntu-22.04",
                steps=steps, resume_command="envdoctor install pytorch --yes")
    result = executor(tmp_path, []).execute(plan)
    calls = (tmp_path / "conda-calls.log").read_text().splitlines()
    assert result.exit_code == 0
    assert any(c.startswith("create -y -n envdoctor-torch") for c in calls) is not existing
    assert any(c.startswith("run -n envdoctor-torch python -m pip install torch==2.4.1") for c in calls)
    if shutil.which("bash"):
        (tmp_path / "conda-calls.log").unlink()
        script = tmp_path / "plan.sh"
        script.write_text(render_sh(plan))
        r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        calls = (tmp_path / "conda-calls.log").read_text().splitlines()
        assert any(c.startswith("create -y -n envdoctor-torch") for c in calls) is not existing
