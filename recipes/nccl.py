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
from typing import Dict, List, Tuple

from packaging.version import Version

from envdoctor.install import validate
from envdoctor.install.plan import Plan, RunCommand, Step

from . import RecipeError, Request, Target, install_step, pick_method, pick_version, repo_steps, target_note

COMPONENT = "nccl"
METHODS: Tuple[str, ...] = ("repo", "pip")
SOURCE = "https://docs.nvidia.com/deeplearning/nccl/release-notes/index.html"
#: NCCL release -> the CUDA minor of its repository package (libnccl2=<v>-1+cuda<minor>).
#: Unverified against the repository index (entered from NCCL's release notes); move to matrix/data.
RELEASES: Dict[str, str] = {
    "2.18.3": "12.2",
    "2.19.3": "12.3",
    "2.21.5": "12.4",
    "2.23.4": "12.6",
    "2.25.1": "12.8",
}


def default_method(target: Target) -> str:
    return "repo"


def versions() -> List[str]:
    return sorted(RELEASES, key=Version)


def plan(request: Request, target: Target, facts: object) -> Plan:
    method = pick_method(sys.modules[__name__], request, target)
    version = pick_version(str(validate.version(request.version)) if request.version else versions()[-1],
                           versions(), "NCCL")
    cuda = RELEASES[version]
    if method == "pip":
        python = request.python or "python3"
        major = cuda.split(".")[0]
        # not verified: the guide gives no pip command; nvidia-nccl-cuNN is the wheel PyTorch depends on
        step = Step("pip-install", f"install NCCL {version} for CUDA {major} with pip ({python})",
                    RunCommand([python, "-m", "pip", "install", f"nvidia-nccl-cu{major}=={version}"]))
        return Plan(title=f"install NCCL {version} (pip)", component=COMPONENT, version=version, method=method,
                    target=target.describe, steps=[step], notes=["Installs into the Python environment of " + python])
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
    steps = repo_steps(target) + [install_step(target, "install-nccl", f"install NCCL {version} built for CUDA "
                                               f"{cuda}", pkgs)]
    return Plan(title=f"install NCCL {version}+cuda{cuda} (repo) on {target.describe}", component=COMPONENT,
                version=version, method=method, target=target.describe, steps=steps,
                notes=[target_note(target), f"NCCL versions: {SOURCE} (table unverified)"])
