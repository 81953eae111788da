"""Every module on its floor: the import-linter contracts of pyproject.toml hold, and list no exception.

The contracts are the layers docs/DESIGN.md draws; ``lint-imports`` (import-linter, Python 3.10 and later)
checks them here and in CI (.ci/run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import HERE

ROOT = os.path.dirname(HERE)


def _contracts():
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        tomllib = pytest.importorskip("tomli")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def test_no_contract_lists_an_exception():
    contracts = _contracts()
    assert {c["id"] for c in contracts} >= {"layers", "acyclic"}
    for c in contracts:
        assert not c.get("ignore_imports"), "%s lists exceptions: %s" % (c["id"], c["ignore_imports"])
    layers = next(c for c in contracts if c["id"] == "layers")
    assert layers["exhaustive"] is True  # every module under envdoctor/ is placed


def test_the_layers_are_the_ones_the_design_draws():
    """docs/DESIGN.md's drawing under "Layers" names the contract's layers, one a line, top to bottom."""
    with open(os.path.join(ROOT, "docs/DESIGN.md"), encoding="utf-8") as f:
        design = f.read()
    section = design[design.index("## Layers"):]
    drawing = section[section.index("```\n") + 4:]
    drawing = drawing[:drawing.index("```")]
    drawn = [line.split("  ")[0].strip() for line in drawing.splitlines() if line and not line.startswith(" ")]
    contract = [" ".join(layer.split()) for layer in next(c for c in _contracts() if c["id"] == "layers")["layers"]]
    assert drawn == contract


def test_the_contracts_hold():
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (the test extra installs it on Python 3.10 and later)")
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
