"""What Python packages that are not frameworks carry for the GPU (``data/package_arch.json``): the lowest compute
capability the published builds of a package's own compiled GPU code run on, per release range (bitsandbytes'
wheels dropped Kepler at 0.39.1 and Maxwell at 0.48; FlashAttention-2 runs on Ampere and newer only). And which
distribution packages are the NVIDIA driver's (``data/driver_packages.json``)."""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from .. import lazyre
from . import in_range, load, range_problem

Row = Dict[str, Any]
ARCH_AREA = "package_arch"
COMPANION_AREA = "companion_cuda"
_CC = lazyre.compile(r"^\d+\.\d$")
_RELEASE = lazyre.compile(r"^\d+\.\d+$")
_NAME = lazyre.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@functools.lru_cache(maxsize=None)
def _driver_package_patterns() -> Tuple[Any, ...]:
    return tuple(re.compile(r["pattern"]) for r in load("driver_packages") if r["manager"] in ("apt", "dnf", "zypper"))


def is_driver_package(name: str) -> bool:
    """Whether an installed package's name is one of the NVIDIA driver's (its kernel module, libcuda, NVML,
    nvidia-smi), by the package managers' rows of ``driver_packages``."""
    return any(p.fullmatch(name) for p in _driver_package_patterns())


def _pypi(row: Row) -> bool:
    return row.get("ecosystem", "pypi") == "pypi"


def arch_packages() -> List[str]:
    """The (normalised) PyPI package names the table has rows for."""
    return sorted({str(r["package"]) for r in load(ARCH_AREA) if _pypi(r)})


def rock_arch_rows() -> List[Row]:
    """The rows for Lua rocks (``ecosystem: luarocks``: Torch7's cutorch): their floor holds for every build."""
    return [r for r in load(ARCH_AREA) if r.get("ecosystem") == "luarocks"]


def arch_row(package: str, version: str) -> Optional[Row]:
    """The row for ``package`` (normalised name) whose releases contain ``version`` (its local label ignored, as
    pip compares a specifier without one), or None."""
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    public = Version(v.public)
    for row in load(ARCH_AREA):
        if row.get("package") == package and _pypi(row) and in_range(row["releases"], public) is True:
            return row
    return None


def validate(rows: List[Row]) -> List[str]:
    """A normalised package name, a version specifier, a compute capability "X.Y" and a remedy sentence."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if not _NAME.match(str(row.get("package") or "")):
            problems.append("%s: package must be a normalised PyPI name (flash-attn)" % where)
        if row.get("ecosystem", "pypi") not in ("pypi", "luarocks"):
            problems.append("%s: ecosystem must be 'pypi' or 'luarocks'" % where)
        elif row.get("ecosystem") == "luarocks":
            if "releases" in row or not isinstance(row.get("framework"), str) or not row["framework"].strip():
                problems.append("%s: a luarocks row names its framework and no releases (rocks are scm builds)"
                                % where)
        else:
            said = range_problem(where, "releases", row.get("releases"), required=True)
            if said:
                problems.append(said)
        if not _CC.match(str(row.get("cc_min") or "")):
            problems.append("%s: cc_min must be a compute capability X.Y" % where)
        if not isinstance(row.get("remedy"), str) or not row["remedy"].strip():
            problems.append("%s: remedy must say what the vendor says to do" % where)
        if "fails" in row and (not isinstance(row["fails"], str) or not row["fails"].strip()):
            problems.append("%s: fails must say what stops working on a GPU below the floor" % where)
        if not isinstance(row.get("source_builds", False), bool):
            problems.append("%s: source_builds must be true or false" % where)
    return problems


def companion_row(package: str, version: str) -> Optional[Row]:
    """The ``companion_cuda`` row for a framework's companion package (torchvision, torchaudio) whose releases
    contain ``version`` (its local label ignored), or None."""
    try:
        public = Version(Version(version).public)
    except InvalidVersion:
        return None
    for row in load(COMPANION_AREA):
        if row.get("package") == package and in_range(row["releases"], public) is True:
            return row
    return None


def companion_refuses(row: Row, framework_cuda: str, companion_cuda: str) -> Optional[bool]:
    """Whether the companion's own import-time check raises for these two CUDA releases ("11.7" vs "11.6"), by
    what the row says it compares; None when either is unreadable."""
    a, b = (re.match(r"^(\d+)\.(\d+)", str(x or "")) for x in (framework_cuda, companion_cuda))
    if a is None or b is None:
        return None
    if row.get("compares") == "major":
        return a.group(1) != b.group(1)
    return (a.group(1), a.group(2)) != (b.group(1), b.group(2))


def validate_companions(rows: List[Row]) -> List[str]:
    """A normalised package name, its framework, a version specifier, what it compares and its message."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if not _NAME.match(str(row.get("package") or "")) or not _NAME.match(str(row.get("framework") or "")):
            problems.append("%s: package and framework must be normalised PyPI names" % where)
        said = range_problem(where, "releases", row.get("releases"), required=True)
        if said:
            problems.append(said)
        if row.get("compares") not in ("major", "major.minor"):
            problems.append("%s: compares must be 'major' or 'major.minor'" % where)
        if not isinstance(row.get("message"), str) or not row["message"].strip():
            problems.append("%s: message must be the error the package raises" % where)
    return problems


JIT_AREA = "jit_toolkits"


def jit_packages() -> List[str]:
    """The (normalised) names of the packages that compile their CUDA code at run time with a toolkit's nvcc."""
    return sorted({str(r["package"]) for r in load(JIT_AREA)})


def jit_row(package: str, version: str) -> Optional[Row]:
    """The ``jit_toolkits`` row for ``package`` whose releases contain ``version`` (its local label ignored), or
    None."""
    try:
        public = Version(Version(version).public)
    except InvalidVersion:
        return None
    for row in load(JIT_AREA):
        if row.get("package") == package and in_range(row["releases"], public) is True:
            return row
    return None


def validate_jit(rows: List[Row]) -> List[str]:
    """A normalised package name, a version specifier, a CUDA release "X.Y", how the nvcc and the host compiler are
    chosen, and a remedy sentence."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if not _NAME.match(str(row.get("package") or "")):
            problems.append("%s: package must be a normalised PyPI name (jittor)" % where)
        said = range_problem(where, "releases", row.get("releases"), required=True)
        if said:
            problems.append(said)
        if not _RELEASE.match(str(row.get("cuda_min") or "")):
            problems.append("%s: cuda_min must be a CUDA release X.Y" % where)
        search = row.get("nvcc_search")
        if not isinstance(search, list) or not search or not all(
                isinstance(s, str) and (s == "PATH" or s.startswith("/")) for s in search):
            problems.append("%s: nvcc_search must list 'PATH' or absolute paths" % where)
        for field in ("label", "nvcc_env", "cc_env", "cc_default", "remedy"):
            if not isinstance(row.get(field), str) or not row[field].strip():
                problems.append("%s: %s must be a non-empty string" % (where, field))
        own = row.get("own_toolkit")
        if own is not None and (not isinstance(own, str) or not own.startswith(("~/", "/"))):
            problems.append("%s: own_toolkit must be a path (~/... or /...)" % where)
    return problems


VALIDATORS = {ARCH_AREA: validate, COMPANION_AREA: validate_companions, JIT_AREA: validate_jit}
