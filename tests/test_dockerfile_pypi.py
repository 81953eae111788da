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



# -- the project in the build context: pip install ., uv sync -----------------------------------------------

PYPROJECT = """[project]
name = "trainer"
version = "0.1"
requires-python = ">=3.10"
dependencies = ["numpy", "torch==2.1.0"]

[project.optional-dependencies]
onnx = ["onnxruntime==1.19.2"]
"""

UV_SOURCES = """
[tool.uv.sources]
torch = { index = "pytorch-cu118" }

[[tool.uv.index]]
name = "pytorch-cu118"
url = "https://download.pytorch.org/whl/cu118"
explicit = true
"""


def _lint_context(tmp_path, dockerfile, pyproject, target=V100_R470):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    return dfmod.lint(dfmod.parse(dockerfile, "Dockerfile"), target, str(tmp_path))


@pytest.mark.parametrize("install", ["RUN pip install .", "RUN pip install -e .", "RUN uv sync",
                                     "RUN uv pip install -r pyproject.toml"])
def test_the_projects_own_dependencies_are_judged(tmp_path, install):
    """pip and uv install the dependencies pyproject.toml declares: torch 2.1.0 from PyPI is the cu121 build,
    which driver 470 cannot run."""
    found = _lint_context(tmp_path, BASE + "COPY . /app\nWORKDIR /app\n" + install + "\n", PYPROJECT)
    assert [(f.code, f.evidence[0]["value"]) for f in found] == [("dockerfile.build_does_not_fit", 4)], found
    assert "torch==2.1.0" in found[0].title and "cu121" in found[0].title


def test_uv_takes_torch_from_the_index_its_sources_name(tmp_path):
    """[tool.uv.sources] sends torch to the cu118 index: uv sync installs a build driver 470 runs; pip does not
    read uv's sources, so `pip install .` still takes PyPI's cu121 build."""
    text = BASE + "COPY . /app\nWORKDIR /app\nRUN uv sync\n"
    assert _lint_context(tmp_path, text, PYPROJECT + UV_SOURCES) == []
    found = _lint_context(tmp_path, BASE + "COPY . /app\nRUN pip install .\n", PYPROJECT + UV_SOURCES)
    assert [f.code for f in found] == ["dockerfile.build_does_not_fit"]


def test_extras_the_command_asks_for_are_judged_too(tmp_path):
    gpu_image = "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y python3-pip\n"
    target = Target(driver="535.104.05", cc="7.0", gpu="Tesla V100")
    assert _lint_context(tmp_path, gpu_image + "RUN pip install .\n", PYPROJECT, target) == []
    found = _lint_context(tmp_path, gpu_image + "RUN pip install '.[onnx]'\n", PYPROJECT, target)
    assert [f.code for f in found] == ["dockerfile.cpu_only_build"]
    found = _lint_context(tmp_path, gpu_image + "RUN uv sync --extra onnx\n", PYPROJECT, target)
    assert [f.code for f in found] == ["dockerfile.cpu_only_build"]


def test_a_project_that_cannot_be_read_is_not_judged(tmp_path):
    found = _lint_context(tmp_path, BASE + "RUN pip install .\n", "this is [not toml")
    assert [(f.code, f.severity) for f in found] == [("dockerfile.context_file_unreadable", "info")]
    assert "pyproject.toml" in found[0].title and "not valid TOML" in found[0].title
    assert dfmod.lint(dfmod.parse(BASE + "RUN uv sync\n", "Dockerfile"), V100_R470, str(tmp_path / "gone")) == []


UV_LOCK = """version = 1
requires-python = ">=3.10"

[[package]]
name = "numpy"
version = "2.1.3"
source = {{ registry = "https://pypi.org/simple" }}

[[package]]
name = "torch"
version = "{torch}"
source = {{ registry = "{registry}" }}

[[package]]
name = "trainer"
version = "0.1"
source = {{ editable = "." }}
"""


@pytest.mark.parametrize("torch,registry,found", [
    ("2.5.1+cu124", "https://download.pytorch.org/whl/cu124", ["dockerfile.build_does_not_fit"]),
    ("2.1.0+cu118", "https://download.pytorch.org/whl/cu118", []),
    ("2.1.0", "https://pypi.org/simple", ["dockerfile.build_does_not_fit"]),  # PyPI's 2.1.0: cu121
])
def test_uv_sync_installs_what_uv_lock_pins(tmp_path, torch, registry, found):
    """With a uv.lock, `uv sync` installs the locked version from the locked registry, whatever range
    pyproject.toml gives and whatever its uv sources say."""
    (tmp_path / "uv.lock").write_text(UV_LOCK.format(torch=torch, registry=registry))
    pyproject = PYPROJECT.replace('"torch==2.1.0"', '"torch>=2.1"') + UV_SOURCES
    codes = [f.code for f in _lint_context(tmp_path, BASE + "COPY . /app\nRUN uv sync --frozen\n", pyproject)]
    assert codes == found


def test_a_package_locked_twice_falls_back_to_the_project_range(tmp_path):
    lock = UV_LOCK.format(torch="2.5.1+cu124", registry="https://download.pytorch.org/whl/cu124") + (
        '\n[[package]]\nname = "torch"\nversion = "2.5.1"\nsource = { registry = "https://pypi.org/simple" }\n')
    (tmp_path / "uv.lock").write_text(lock)
    assert _lint_context(tmp_path, BASE + "RUN uv sync\n", PYPROJECT + UV_SOURCES) == []  # cu118 from the sources
