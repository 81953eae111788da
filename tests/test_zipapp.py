"""scripts/build_zipapp.py: envdoctor.pyz runs `diagnose` and `check --policy` from a bare interpreter.

Bare: ``python -I -S`` (no environment variables, no site-packages at all), on Python 3.8 when pyenv
has one, and on the interpreter running the tests.  The live run reads NVML through the fake
libnvidia-ml.so.1 (tests/fakenvml), so the vendored nvidia-ml-py is exercised end to end.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from .engines import BROKEN, BROKEN_LINE, HEALTHY, ROOT, write_policy
from .fakenvml.build import build as build_fake_nvml
from .fakenvml.build import fake_env, load_answers, write_answers

pytestmark = pytest.mark.slow


def interpreters():
    found = []
    for cand in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8"))):
        if subprocess.run([cand, "-c", "import sys; assert sys.version_info[:2] == (3, 8)"],
                          capture_output=True).returncode == 0:
            found.append(cand)
            break
    found.append(getattr(sys, "_base_executable", None) or sys.executable)
    return found


@pytest.fixture(scope="module")
def pyz(tmp_path_factory):
    out = tmp_path_factory.mktemp("pyz") / "envdoctor.pyz"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "build_zipapp.py"), "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if "pip download" in r.stderr or "Could not find" in r.stderr or "ERROR:" in r.stderr:
            pytest.skip("the dependencies' wheels could not be downloaded: %s" % r.stderr.strip()[-300:])
        raise AssertionError(r.stdout + r.stderr)
    return str(out)


def bare(python, pyz, tmp_path, *args, env=None):
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    base.update(env or {})
    return subprocess.run([python, "-I", "-S", pyz] + list(args), capture_output=True, text=True, env=base,
                          cwd=str(tmp_path), timeout=120)


@pytest.mark.parametrize("python", interpreters())
def test_the_pyz_checks_and_diagnoses_from_a_bare_interpreter(pyz, tmp_path, python):
    policy = write_policy(str(tmp_path))
    r = bare(python, pyz, tmp_path, "check", "--policy", policy, "--snapshot", BROKEN, "--format", "nhc")
    assert r.returncode == 1 and r.stdout == BROKEN_LINE + "\n", r.stderr
    r = bare(python, pyz, tmp_path, "check", "--policy", policy, "--snapshot", HEALTHY)
    assert r.returncode == 0 and "READY" in r.stdout, r.stderr
    r = bare(python, pyz, tmp_path, "diagnose", "--snapshot", HEALTHY, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["error"] == 0
    r = bare(python, pyz, tmp_path, "--version")
    assert r.returncode == 0 and r.stdout.startswith("envdoctor ")
    # unpacked once, into a private per-user cache directory
    cache = tmp_path / "home" / ".cache" / "envdoctor" / "pyz"
    (build,) = os.listdir(str(cache))
    assert os.stat(str(cache / build)).st_mode & 0o077 == 0


def test_the_pyz_reads_nvml_live(pyz, tmp_path):
    try:
        lib = build_fake_nvml(str(tmp_path / "fakenvml"))
    except RuntimeError as exc:
        pytest.skip("cannot build the fake NVML library: %s" % exc)
    answers = write_answers(load_answers("h100.json"), str(tmp_path / "answers.txt"))
    env = {k: v for k, v in fake_env(lib, answers, {}).items()}
    r = bare(interpreters()[0], pyz, tmp_path, "diagnose", "--format", "json", env=env)
    facts = {f["key"]: f for p in json.loads(r.stdout)["probes"] for f in p["facts"]}
    assert facts["gpu.count"]["value"] == 1 and facts["gpu.0.name"]["value"] == "NVIDIA H100 80GB HBM3", r.stderr
    assert facts["driver.version"]["value"] == "550.54.15"


def test_an_unsafe_cache_directory_is_not_used(pyz, tmp_path):
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    os.chmod(str(cache), 0o777)  # others could plant code here: the pyz must not run from it
    policy = write_policy(str(tmp_path))
    r = bare(sys.executable, pyz, tmp_path, "check", "--policy", policy, "--snapshot", HEALTHY,
             env={"ENVDOCTOR_PYZ_CACHE": str(cache)})
    assert r.returncode == 0, r.stderr
    assert os.listdir(str(cache)) == []
