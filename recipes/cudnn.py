"""cuDNN: NVIDIA's package repository, redist archives (no root) or pip wheels.

Commands from NVIDIA's cuDNN installation guide,
https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html :

* ``repo`` (network repository, after enabling NVIDIA's CUDA repo): ``apt-get install -y cudnn9-cuda-12``
  / ``dnf install -y cudnn9-cuda-12``: the newest cuDNN 9 built for CUDA 12 in the repository.
* ``redist``: :mod:`recipes.cuda_redist` (the command line fetches the manifest and calls it).
* ``pip``: ``python -m pip install nvidia-cudnn-cu12==9.1.0.*`` ("Installing cuDNN with pip").

Which CUDA majors a cuDNN release was built for comes from the matrix (``cudnn.json``).
"""

from __future__ import annotations

import sys
from typing import Any, List, Tuple

from packaging.version import Version

from envdoctor.install import validate
from envdoctor.install.plan import Plan, RunCommand, Step
from envdoctor.matrix import load

from . import (
    RecipeError,
    Request,
    Target,
    driver_cuda_major,
    driver_runs_build,
    install_step,
    nearest_versions,
    pick_method,
    repo_steps,
    target_note,
)
from .docker_image import pip_target

COMPONENT = "cudnn"
METHODS: Tuple[str, ...] = ("repo", "redist", "pip")
GUIDE = "https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html"


def default_method(target: Target) -> str:
    return "repo"


def versions() -> List[str]:
    return [r["version"] for r in load("cudnn")]


def _row(version: str) -> Any:
    """The newest row whose release starts with ``version`` ("8.9" -> 8.9.7, "9" -> the newest 9.x); else (a row
    stands for its series up to the next row) the newest of the major at or below ``version``."""
    want = Version(version)
    rows = [r for r in load("cudnn") if Version(r["version"]).release[:len(want.release)] == want.release]
    if not rows and len(want.release) > 1:
        rows = [r for r in load("cudnn") if Version(r["version"]).major == want.major and Version(r["version"]) <= want]
    if not rows:
        raise RecipeError(f"cuDNN {version} is not a version envdoctor knows",
                          ["--version " + v for v in nearest_versions(version, versions())])
    return max(rows, key=lambda r: Version(r["version"]))


def cuda_major(request: Request, facts: Any, row: Any, lacks: str = "has no build for") -> str:
    """The CUDA major to build against: ``--option cuda=N``, else the newest the row has that the installed
    driver runs (a CUDA 12 build runs on a CUDA 13 driver, not the reverse), else 12 (what the frameworks'
    wheels use) or the newest the row has."""
    majors = sorted({str(Version(c).major) for c in row["cuda"]}, key=int)
    wanted = request.options.get("cuda") or ""
    drv = driver_cuda_major(facts)
    if not wanted and drv:
        runs = [m for m in majors if driver_runs_build(facts, m)]
        if not runs:
            raise RecipeError(f"cuDNN {row['version']} is built for CUDA {', '.join(majors)}; the installed driver "
                              f"runs CUDA {drv} at most (source {row['source']['url']})",
                              ["envdoctor install driver", _alternative(request, "8.9")])
        wanted = runs[-1]
    wanted = wanted or ("12" if "12" in majors else majors[-1])
    if wanted not in majors:
        raise RecipeError(f"cuDNN {row['version']} {lacks} CUDA {wanted} (it has CUDA {', '.join(majors)}; "
                          f"source {row['source']['url']})",
                          [_alternative(request, row["version"], f" --option cuda={m}") for m in majors])
    return wanted


def _alternative(request: Request, version: str, more: str = "") -> str:
    """``envdoctor install cudnn --version VERSION`` with the request's method, or pip where the repo method
    cannot install that exact release (only the newest cuDNN 9 is in the repository): as printed, it plans."""
    method = request.method or "repo"
    if method == "repo" and not _repo_installs(version):
        method = "pip"
    return f"envdoctor install cudnn --method {method} --version {version}{more}"


def _repo_installs(version: str) -> bool:
    """Whether the repo method installs cuDNN ``version``: from cuDNN 9 a cudnn9 package, the newest release of its
    major (what NVIDIA's repository installs) unless only the major is named; before 9, a release whose exact
    libcudnn8 packages the matrix names (``repo_packages``: NVIDIA's repositories keep every cuDNN 8 release)."""
    row = _row(version)
    major = Version(row["version"]).major
    if major < 9:
        return bool(row.get("repo_packages")) and (len(Version(version).release) < 3 or row["version"] == version)
    newest_of_major = [v for v in versions() if Version(v).major == major][-1]
    return len(Version(version).release) == 1 or row["version"] == newest_of_major


def _repo_packages(row: Any, target: Target, cu: str) -> List[str]:
    """cuDNN 8 from NVIDIA's repository, pinned: ``libcudnn8=8.9.7.29-1+cuda12.2 libcudnn8-dev=...`` (apt),
    ``libcudnn8-8.9.7.29-1.cuda12.2 libcudnn8-devel-...`` (dnf/yum); RecipeError where the matrix names none."""
    manager = "apt" if target.family == "debian" else "dnf"
    pins = (row.get("repo_packages") or {}).get(manager) or {}
    if cu not in pins:
        have = sorted(pins, key=int)
        raise RecipeError(f"cuDNN {row['version']} for CUDA {cu} is not a {manager} package envdoctor can pin "
                          f"(it knows {', '.join('CUDA ' + h for h in have) or 'none'})",
                          [f"envdoctor install cudnn --method repo --version {row['version']} --option cuda={h}"
                           for h in have] + [f"envdoctor install cudnn --method pip --version {row['version']}"])
    major = Version(row["version"]).major
    if manager == "apt":
        return [f"libcudnn{major}={pins[cu]}", f"libcudnn{major}-dev={pins[cu]}"]
    return [f"libcudnn{major}-{pins[cu]}", f"libcudnn{major}-devel-{pins[cu]}"]


def plan(request: Request, target: Target, facts: Any) -> Plan:
    method = pick_method(sys.modules[__name__], request, target)
    if method == "redist":
        raise RecipeError("the redist method needs NVIDIA's manifest, which the command line fetches",
                          ["envdoctor install cudnn --method redist --version 9.1.0 --prefix ~/cudnn-9.1"])
    version = request.version or versions()[-1]
    validate.version(version)
    row = _row(version)
    pins = (row.get("repo_packages") or {}).get("apt" if target.family == "debian" else "dnf") or {}
    if method == "repo" and Version(row["version"]).major < 9 and pins:
        # only the CUDA majors whose package the repository is known to carry (and their alternatives)
        cu = cuda_major(request, facts, dict(row, cuda=[c for c in row["cuda"] if str(Version(c).major) in pins]),
                        "has no repository package envdoctor knows for")
    else:
        cu = cuda_major(request, facts, row)
    if method == "pip":
        # the wheels carry four-part versions (nvidia-cudnn-cu12 9.1.0.70): a prefix of them matches
        spec = "==" + ".".join(str(p) for p in Version(version).release) + ".*"
        python, make, said = pip_target(request, facts, COMPONENT)
        label = version if len(Version(version).release) >= 3 else row["version"]
        # https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html ("Installing cuDNN with pip"):
        #   py -m pip install nvidia-cudnn-cu12
        # not verified: that section of the guide was not in the stored copies (only the page's start is)
        step = Step("pip-install", f"install cuDNN {label} for CUDA {cu} with pip ({python})",
                    RunCommand([python, "-m", "pip", "install", f"nvidia-cudnn-cu{cu}{spec}"], 3600))
        return Plan(title=f"install cuDNN {label} (pip, CUDA {cu})", component=COMPONENT,
                    version=label, method=method, target=target.describe, steps=make + [step],
                    notes=said or ["Installs into the Python environment of " + python])
    major = Version(row["version"]).major
    newest_of_major = [v for v in versions() if Version(v).major == major][-1]
    if not _repo_installs(request.version or str(major)):
        pinned = [r["version"] for r in load("cudnn")
                  if Version(r["version"]).major == major and r.get("repo_packages")]
        other = newest_of_major if major >= 9 else (pinned[-1] if pinned else None)
        raise RecipeError(f"the repo method installs the newest cuDNN {major} in NVIDIA's repository, not exactly "
                          f"{version}" if major >= 9 else f"envdoctor knows no repository package of cuDNN {version}"
                          + (f" (it pins cuDNN {', '.join(pinned)})" if pinned else ""),
                          [f"--method redist --version {row['version']} --prefix ~/cudnn-{row['version']}",
                           f"--method pip --version {version}"]
                          + ([f"--method repo --version {other}"] if other and other != version else []))
    if major < 9:
        pkgs = _repo_packages(row, target, cu)
        # NVIDIA's CUDA repositories carry every cuDNN 8 release as libcudnn8 / libcudnn8-dev (-devel on RHEL)
        # versioned <cudnn>-1+cuda<X.Y> (<cudnn>-1.cuda<X.Y>): matrix/data/cudnn.json repo_packages, with its source
        steps = repo_steps(target, request.mirror) + [
            install_step(target, "install-cudnn", f"install cuDNN {row['version']} for CUDA {cu} ({pkgs[0]})", pkgs)]
        return Plan(title=f"install cuDNN {row['version']} for CUDA {cu} (repo) on {target.describe}",
                    component=COMPONENT, version=row["version"], method=method, target=target.describe, steps=steps,
                    notes=[target_note(target, request.mirror),
                           f"An upgrade would replace it with a newer cuDNN {major}: "
                           + (f"apt-mark hold libcudnn{major} libcudnn{major}-dev" if target.family == "debian" else
                              f"dnf versionlock add libcudnn{major} libcudnn{major}-devel (the versionlock plugin)")
                           + " keeps it."])
    pkg = f"cudnn{major}-cuda-{cu}"
    # https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html (Ubuntu/Debian and RHEL network repo):
    #   sudo apt-get -y install cudnn9-cuda-12   /   sudo dnf -y install cudnn9-cuda-12
    # not verified: https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html is stored only up
    # to "Package Manager Installation" (before the package names); cudnn9-cuda-12 is the name public
    # scripts install from NVIDIA's repository
    steps = repo_steps(target, request.mirror) + [
        install_step(target, "install-cudnn", f"install cuDNN {major} for CUDA {cu} ({pkg})", [pkg])]
    return Plan(title=f"install cuDNN {major} for CUDA {cu} (repo) on {target.describe}", component=COMPONENT,
                version=row["version"], method=method, target=target.describe, steps=steps,
                notes=[target_note(target, request.mirror),
                       f"The repository's newest cuDNN {major} for CUDA {cu} is installed"])
