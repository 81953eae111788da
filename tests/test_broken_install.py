"""A broken installation (a runtime dependency missing or failing to import) ends in one line that names the
package and how to repair it, with exit 2, never a traceback; nvidia-ml-py, which only the NVML child imports,
is not needed for a report.

The packages are made unimportable in the child interpreter only, by a ``sitecustomize`` module on its
PYTHONPATH: ``sys.modules[name] = None`` is how a package that is not installed looks to ``import`` (a
ModuleNotFoundError naming it), and a module of that name that raises ImportError is a package whose own import
fails (a half-removed install, a missing shared library)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .fakenvml.build import fake_env, load_answers, write_answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, blocker_dir, env=None):
    env = dict(os.environ if env is None else env, NO_COLOR="1")
    env["PYTHONPATH"] = str(blocker_dir)
    return subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def _missing(tmp_path, *names):
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n" + "".join("sys.modules[%r] = None\n" % n for n in names))
    return tmp_path


@pytest.mark.parametrize("package,args", [
    ("distro", ["diagnose"]),
    ("distro", ["snapshot", "-o", "-"]),
    ("click", ["diagnose", "--only", "driver"]),  # a plain `diagnose` needs no click (below)
    ("click", ["explain", "gpu.lost"]),
    ("packaging", ["advise", "--driver", "535.104.05", "--gpu", "RTX 4090"]),
    ("packaging", ["matrix", "torch", "2.4"]),
])
def test_a_missing_dependency_is_one_line_naming_it_and_the_repair(tmp_path, package, args):
    r = _run(args, _missing(tmp_path, package))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("envdoctor: cannot run: the Python package %s, which envdoctor needs" % package)
    assert "pip install --force-reinstall envdoctor" in lines[0]
    assert "pip install --force-reinstall %s)" % package in lines[0]


def test_a_plain_diagnose_needs_no_click(tmp_path):
    # envdoctor.cli.fastpath: a live diagnose with plain options parses its command line without click.
    r = _run(["diagnose", "--format", "json"], _missing(tmp_path, "click"))
    assert r.returncode in (0, 1) and r.stderr == "" and '"findings"' in r.stdout, r.stderr


def test_a_dependency_whose_own_import_fails_is_named_too(tmp_path):
    # What a package whose compiled part lost its library looks like: its import raises ImportError without a name.
    (tmp_path / "distro.py").write_text("raise ImportError('libfoo.so.1: cannot open shared object file')\n")
    r = _run(["diagnose"], tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert "the Python package distro, which envdoctor needs" in r.stderr and "libfoo.so.1" in r.stderr


def test_requests_is_needed_only_by_the_commands_that_download(tmp_path):
    blocker = _missing(tmp_path, "requests")
    r = _run(["explain", "gpu.lost"], blocker)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


def test_without_nvidia_ml_py_diagnose_still_reports_and_says_so(fake_lib, tmp_path):
    """NVML's library loads (the fake one) but its Python binding is missing: a report, not a refusal."""
    answers = write_answers(load_answers("h100.json"), str(tmp_path / "answers.txt"))
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    r = _run(["diagnose", "--format", "json"], _missing(blocker, "pynvml"), env=fake_env(fake_lib, answers))
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr
    assert "nvidia-ml-py" in r.stdout and '"schema_version"' in r.stdout
