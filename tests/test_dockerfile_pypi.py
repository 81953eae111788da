"""``envdoctor dockerfile``: a torch line without an index of its own installs PyPI's build.

``pip install torch==2.1.0`` from PyPI is the CUDA 12.1 build on Linux x86_64 (its METADATA pins
nvidia-cuda-runtime-cu12==12.1.105; torch.json's ``pypi_variant``, proved by scripts/verify_matrix.py from
PyPI's wheels), not whichever of 2.1's download.pytorch.org builds would fit: CUDA 12.1 needs driver 525.60.13
or newer, so on a driver-470 host (a Tesla V100 on the R470 long-term branch) that line gives a torch that
cannot use the GPU, while the same version from the cu118 index runs (CUDA 11.x: driver 450.80.02 or newer).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envdoctor import dockerfile as dfmod
from envdoctor.cli import cli
from envdoctor.target import Target

V100_R470 = Target(driver="470.82.01", cc="7.0", gpu="Tesla V100")
BASE = "FROM python:3.10-slim\n"


def _lint(text, target=V100_R470):
    return dfmod.lint(dfmod.parse(text, "Dockerfile"), target)


def test_plain_pip_install_is_judged_as_pypis_cuda_12_1_build(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text(BASE + "RUN pip install torch==2.1.0\n")
    r = CliRunner().invoke(cli, ["dockerfile", str(path), "--driver", "470.82.01", "--gpu", "Tesla V100"])
    assert r.exit_code == 1, r.output
    text = " ".join(r.output.split())
    assert "ERROR line 2: torch==2.1.0 (PyTorch 2.1, cu121) does not fit" in text, r.output
    assert "compute capability 7.0" in text  # what --gpu 'Tesla V100' resolves to, as Target below
    found = _lint(BASE + "RUN pip install torch==2.1.0\n")
    assert [(f.code, f.severity) for f in found] == [("dockerfile.build_does_not_fit", "error")]
    assert "cu121" in found[0].title and "cu118" not in found[0].title, found[0].title
    assert "CUDA 12.1" in found[0].title and "470.82.01" in found[0].title
    fix = found[0].fix.commands[0]
    assert "/whl/cu11" in fix, fix  # a CUDA 11.x build, which driver 470 runs


@pytest.mark.parametrize("line", [
    "RUN pip install torch==2.1.0 --index-url https://download.pytorch.org/whl/cu118",
    "RUN pip install torch==2.1.0+cu118 -f https://download.pytorch.org/whl/torch_stable.html",
    # a local version sorts above the plain one: pip takes 2.1.0+cu118 from the extra index
    "RUN pip install torch==2.1.0 --extra-index-url https://download.pytorch.org/whl/cu118",
    # pip reads its index from the environment too
    "ENV PIP_INDEX_URL=https://download.pytorch.org/whl/cu118\nRUN pip install torch==2.1.0",
    # ... or from the command's own environment
    "RUN export PIP_INDEX_URL=https://download.pytorch.org/whl/cu118 && pip install torch==2.1.0",
    "RUN PIP_INDEX_URL=https://download.pytorch.org/whl/cu118 pip install torch==2.1.0",
])
def test_the_cu118_build_on_the_same_host_is_fine(line):
    assert _lint(BASE + line + "\n") == []


def test_pypis_build_on_a_driver_that_runs_it_is_fine():
    assert _lint(BASE + "RUN pip install torch==2.1.0\n", Target(driver="535.104.05", cc="7.0", gpu="Tesla V100")) == []


def test_older_releases_take_their_own_pypi_build():
    """torch 1.12.1 on PyPI is the CUDA 10.2 build (its torch/version.py: cuda = '10.2'), which driver 470
    runs; torch 2.0.1 is CUDA 11.7 (METADATA: nvidia-cuda-runtime-cu11==11.7.99), which it runs through
    minor-version compatibility."""
    assert _lint("FROM python:3.9-slim\nRUN pip install torch==1.12.1\n") == []
    assert _lint("FROM python:3.10-slim\nRUN pip install torch==2.0.1\n") == []
    found = _lint("FROM python:3.11-slim\nRUN pip install 'torch>=2.5,<2.6'\n")
    assert len(found) == 1 and "cu124" in found[0].title and "cu118" not in found[0].title

