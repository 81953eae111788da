"""A real pip plan, run by the executor, into a throw-away virtual environment; then the real probes.

Installs ``nvidia-cuda-runtime-cu12==12.4.127`` (NVIDIA's CUDA 12.4 Update 1 runtime wheel on
PyPI, https://pypi.org/project/nvidia-cuda-runtime-cu12/12.4.127/) and checks that the cuda
probe's ``cuda.pip_wheels`` fact finds it.  Skips when the package index cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from envdoctor.facts import Facts
from envdoctor.host.live import LiveHost
from envdoctor.install.executor import EXIT_OK, Executor
from envdoctor.install.plan import Plan
from envdoctor.probes import run_probes
from envdoctor.recipes import docker_image

WHEEL = "nvidia-cuda-runtime-cu12==12.4.127"
pytestmark = [pytest.mark.network, pytest.mark.slow]


def _index_reachable(tmp_path) -> bool:
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                           "--retries", "1", "--timeout", "15", "-d", str(tmp_path / "probe"), WHEEL],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, check=False)
    return proc.returncode == 0


def test_pip_plan_installs_a_cuda_wheel_the_probe_then_finds(tmp_path):
    if not _index_reachable(tmp_path):
        pytest.skip("the package index is unreachable (pip download failed)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    what = docker_image.PipInstall((WHEEL,))
    plan = Plan(title="install " + WHEEL, component="cuda", version="12.4.127", method="pip", target="linux-x86_64",
                steps=docker_image.pip_steps(python, what, "pip install " + WHEEL))
    lines = []
    result = Executor(lines.append, yes=True, log_path=str(tmp_path / "install.log")).execute(plan)
    assert result.exit_code == EXIT_OK, "\n".join(lines) + result.message
    results = run_probes(LiveHost(python_executable=python), only=["cuda"], parallel=False)
    facts = Facts(f for r in results for f in r.facts)
    wheels = facts.value("cuda.pip_wheels")
    assert {"name": "nvidia-cuda-runtime-cu12", "version": "12.4.127", "cuda_major": 12} == {
        k: w[k] for w in wheels or [] if w["name"] == "nvidia-cuda-runtime-cu12" for k in ("name", "version",
                                                                                          "cuda_major")}
    assert os.path.isdir(next(w["location"] for w in wheels if w["name"] == "nvidia-cuda-runtime-cu12"))
