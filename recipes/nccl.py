"""NCCL: NVIDIA's package repository (pinned ``libnccl2`` / ``libnccl-dev``) or pip.

Commands from the NCCL installation guide,
https://docs.nvidia.com/deeplearning/nccl/install-guide/index.html ("Network installer"):

* Ubuntu: ``apt install libnccl2=2.21.5-1+cuda12.4 libnccl-dev=2.21.5-1+cuda12.4``
* RHEL/CentOS: ``yum install libnccl-2.21.5-1+cuda12.4 libnccl-devel-2.21.5-1+cuda12.4``
* pip: ``python -m pip install nvidia-nccl-cu12==2.21.5`` (the wheel PyTorch depends on).

NCCL has no table in the matrix yet: :data:`RELEASES` below lists the builds envdoctor knows,
each with the CUDA minor of its package (``+cuda12.4``) and its source.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Tuple

from packaging.version import Version

from envdoctor.install import validate
from envdoctor.install.plan import Plan, RunCommand, Step

from . import (
    RecipeError,
    Request,
    Target,
    driver_cuda_major,
    driver_runs_build,
    install_step,
    pick_method,
    pick_version,
    repo_steps,
    target_note,
)
from .docker_image import pip_target

COMPONENT = "nccl"
METHODS: Tuple[str, ...] = ("repo", "pip")
SOURCE = "https://docs.nvidia.com/deeplearning/nccl/release-notes/index.html"
#: NCCL release -> {CUDA major: the CUDA minor of its repository package} (libnccl2=<v>-1+cuda<minor>).
#: Not verified against the repository index; the 2.27/2.28 builds are the package versions public install
#: scripts pin from NVIDIA's repository (libnccl2=2.28.9-1+cuda12.9 / 2.28.9-1+cuda13.0, 2.27.7-1+cuda12.9 /
#: 2.27.7-1+cuda13.0, libnccl-dev 2.28.3-1+cuda13.0); the older ones were entered from NCCL's release notes.
RELEASES: Dict[str, Dict[str, str]] = {
    "2.18.3": {"12": "12.2"},
    "2.19.3": {"12": "12.3"},
    "2.21.5": {"12": "12.4"},
    "2.23.4": {"12": "12.6"},
    "2.25.1": {"12": "12.8"},
    "2.27.7": {"12": "12.9", "13": "13.0"},
    "2.28.3": {"13": "13.0"},
    "2.28.9": {"12": "12.9", "13": "13.0"},
}


def default_method(target: Target) -> str:
    return "repo"


def versions() -> List[str]:
    return sorted(RELEASES, key=Version)


def build_for(version: str, request: Request, facts: Any) -> str:
    """The CUDA minor of the build to install: ``--option cuda=N``, else the newest CUDA major of the release
    that the installed driver runs (:func:`recipes.driver_runs_build`), else the newest."""
    builds = RELEASES[version]
    majors = sorted(builds, key=int)
    wanted = str(request.options.get("cuda") or "").split(".")[0]
    if wanted:
        if wanted not in builds:
            raise RecipeError(f"NCCL {version} has no CUDA {wanted} build (it has CUDA {', '.join(majors)})",
                              [f"envdoctor install nccl --version {version} --option cuda={m}" for m in majors])
        return builds[wanted]
    runs = [m for m in majors if driver_runs_build(facts, m)]
    if not runs:
        drv = driver_cuda_major(facts)
        older = [v for v in versions() if any(driver_runs_build(facts, m) for m in RELEASES[v])]
        raise RecipeError(f"NCCL {version} is built for CUDA {', '.join(majors)}; the installed driver runs CUDA "
                          f"{drv} at most", [f"envdoctor install nccl --version {older[-1]}"] if older else
                          ["envdoctor install driver"])
    return builds[runs[-1]]


def plan(request: Request, target: Target, facts: Any) -> Plan:
    method = pick_method(sys.modules[__name__], request, target)
    version = pick_version(str(validate.version(request.version)) if request.version else versions()[-1],
                           versions(), "NCCL")
    cuda = build_for(version, request, facts)
    if method == "pip":
        python, make, said = pip_target(request, facts, COMPONENT)
        major = cuda.split(".")[0]
        # not verified: the guide gives no pip command; nvidia-nccl-cuNN is the wheel PyTorch depends on
        step = Step("pip-install", f"install NCCL {version} for CUDA {major} with pip ({python})",
                    RunCommand([python, "-m", "pip", "install", f"nvidia-nccl-cu{major}=={version}"], 3600))
        return Plan(title=f"install NCCL {version} (pip)", component=COMPONENT, version=version, method=method,
                    target=target.describe, steps=make + [step],
                    notes=said or ["Installs into the Python environment of " + python])
    # not verified: https://docs.nvidia.com/deeplearning/nccl/install-guide/index.html ("Installing NCCL",
    # Ubuntu / RHEL) is stored only up to its overview; the libnccl2=<v>-1+cuda<X.Y> / libnccl-<v>-1+cuda<X.Y>
    # pins are taken from the guide as quoted in the module docstring, and RELEASES is unverified too
    pin = f"{version}-1+cuda{cuda}"
    if target.family == "debian":
        pkgs = [f"libnccl2={pin}", f"libnccl-dev={pin}"]
    else:
        pkgs = [f"libnccl-{pin}", f"libnccl-devel-{pin}"]
    if not version:  # pragma: no cover - pick_version always answers
        raise RecipeError("no NCCL version")
    steps = repo_steps(target, request.mirror) + [
        install_step(target, "install-nccl", f"install NCCL {version} built for CUDA {cuda}", pkgs)]
    return Plan(title=f"install NCCL {version}+cuda{cuda} (repo) on {target.describe}", component=COMPONENT,
                version=version, method=method, target=target.describe, steps=steps,
                notes=[target_note(target, request.mirror), f"NCCL versions: {SOURCE} (table unverified)"])
