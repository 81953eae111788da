"""The built wheel carries ``recipes/``: build it, install it in a fresh venv, plan from there."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.slow


def _run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900, check=False,
                          text=True, **kw)


def test_wheel_ships_recipes_and_plans_from_an_installed_copy(tmp_path):
    out = tmp_path / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "-w", str(out)])
    assert built.returncode == 0, built.stdout[-3000:]
    wheel = next(str(out / n) for n in os.listdir(out) if n.startswith("envdoctor-") and n.endswith(".whl"))
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for module in ("recipes/__init__.py", "recipes/cuda_redist.py", "recipes/pytorch.py", "recipes/docker_image.py",
                   "envdoctor/matrix/data/torch.json"):
        assert module in names, module
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    installed = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--retries", "1", "--timeout", "15",
                      wheel])
    if installed.returncode != 0:
        pytest.skip("cannot install the wheel's dependencies (package index unreachable?): "
                    + installed.stdout.strip().splitlines()[-1])
    cwd = str(tmp_path)  # not the checkout, so the installed copy is what runs
    plan = _run([str(venv / "bin" / "python"), "-c",
                 "import recipes.pytorch as p, recipes; from envdoctor.facts import Facts;"
                 "print(p.__file__); print(p.plan(recipes.Request('pytorch', '2.7', 'pip', python='/usr/bin/python3'),"
                 " recipes.parse_target('ubuntu22.04'), Facts()).steps[1].action.argv)"], cwd=cwd)
    assert plan.returncode == 0, plan.stdout
    assert str(venv) in plan.stdout and "https://download.pytorch.org/whl/cu126" in plan.stdout
    # The issue's own example, from the installed copy: a dry run that needs no network (repo method,
    # planned for a named target), rendered as the reviewable script.
    res = _run([str(venv / "bin" / "envdoctor"), "install", "cuda", "--version", "12.4", "--os", "ubuntu22.04",
                "--dry-run", "--format", "sh"], cwd=cwd)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "set -euo pipefail" in res.stdout and "cuda-toolkit-12-4" in res.stdout
