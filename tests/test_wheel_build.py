"""The built wheel carries ``recipes/`` as ``envdoctor.recipes``: build it, install it in a fresh venv, plan from
there, from a directory that has a ``recipes`` package of its own (a common folder name). The editable install
does the same with no build hook and no import hook (the link envdoctor/recipes -> ../recipes)."""

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


def _user_project_with_its_own_recipes(tmp_path):
    """A working directory like a user's: it has a ``recipes`` package that is not envdoctor's."""
    cwd = tmp_path / "project"
    (cwd / "recipes").mkdir(parents=True)
    (cwd / "recipes" / "__init__.py").write_text("# the user's own cooking recipes\nRECIPES = ['soup']\n")
    return str(cwd)


def test_wheel_ships_recipes_and_plans_from_an_installed_copy(tmp_path):
    out = tmp_path / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "-w", str(out)])
    assert built.returncode == 0, built.stdout[-3000:]
    # The licence is an SPDX string the backend takes without a deprecation warning.
    assert "deprecat" not in built.stdout.lower(), built.stdout[-3000:]
    wheel = next(str(out / n) for n in os.listdir(out) if n.startswith("envdoctor-") and n.endswith(".whl"))
    import zipfile

    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    for module in ("envdoctor/recipes/__init__.py", "envdoctor/recipes/cuda_redist.py", "envdoctor/recipes/pytorch.py",
                   "envdoctor/recipes/docker_image.py", "envdoctor/matrix/data/torch.json", "envdoctor/py.typed",
                   "envdoctor/schemas/snapshot.schema.json"):
        assert module in names, module
    assert not [n for n in names if n.startswith("recipes/")], "a top-level recipes package would shadow the user's"
    assert not [n for n in names if n.startswith(("tests/", "scripts/"))]
    metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Classifier: Programming Language :: Python :: 3.8" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    installed = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--retries", "1", "--timeout", "15",
                      wheel])
    if installed.returncode != 0:
        pytest.skip("cannot install the wheel's dependencies (package index unreachable?): "
                    + installed.stdout.strip().splitlines()[-1])
    cwd = _user_project_with_its_own_recipes(tmp_path)  # not the checkout, so the installed copy is what runs
    plan = _run([str(venv / "bin" / "python"), "-c",
                 "import envdoctor.recipes.pytorch as p, envdoctor.recipes as r; from envdoctor.facts import Facts;"
                 "print(p.__file__); print(p.plan(r.Request('pytorch', '2.7', 'pip', python='/usr/bin/python3'),"
                 " r.parse_target('ubuntu22.04'), Facts()).steps[1].action.argv)"], cwd=cwd)
    assert plan.returncode == 0, plan.stdout
    assert str(venv) in plan.stdout and "https://download.pytorch.org/whl/cu126" in plan.stdout
    res = _run([str(venv / "bin" / "python"), "-m", "envdoctor", "install", "pytorch", "--os", "ubuntu22.04",
                "--dry-run"], cwd=cwd)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "pip install 'torch==" in res.stdout
    # The issue's own example, from the installed copy: a dry run that needs no network (repo method,
    # planned for a named target), rendered as the reviewable script.
    res = _run([str(venv / "bin" / "envdoctor"), "install", "cuda", "--version", "12.4", "--os", "ubuntu22.04",
                "--dry-run", "--format", "sh"], cwd=cwd)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "set -euo pipefail" in res.stdout and "cuda-toolkit-12-4" in res.stdout


def test_the_editable_install_plans_from_a_directory_with_its_own_recipes_package(tmp_path):
    """The suite runs from ``pip install -e .``: there too ``envdoctor.recipes`` is the checkout's recipes/
    (through the link envdoctor/recipes), with no import hook on the interpreter's meta path."""
    cwd = _user_project_with_its_own_recipes(tmp_path)
    where = _run([sys.executable, "-c", "import sys, envdoctor.recipes as r; print(r.__file__); "
                                        "print([type(f).__name__ for f in sys.meta_path])"], cwd=cwd)
    assert where.returncode == 0, where.stdout
    path, finders = where.stdout.strip().splitlines()
    assert os.path.realpath(path) == os.path.join(os.path.realpath(ROOT), "recipes", "__init__.py")
    assert "Recipes" not in finders and "Editable" not in finders, finders
    res = _run([sys.executable, "-m", "envdoctor", "install", "pytorch", "--os", "ubuntu22.04", "--dry-run"], cwd=cwd)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "pip install 'torch==" in res.stdout
