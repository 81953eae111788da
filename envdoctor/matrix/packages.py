"""What Python packages that are not frameworks carry for the GPU (``data/package_arch.json``): the lowest compute
capability the published builds of a package's own compiled GPU code run on, per release range (bitsandbytes'
wheels dropped Kepler at 0.39.1 and Maxwell at 0.48; FlashAttention-2 runs on Ampere and newer only). And which
distribution packages are the NVIDIA driver's (``data/driver_packages.json``)."""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import in_range, load

Row = Dict[str, Any]
ARCH_AREA = "package_arch"
_CC = re.compile(r"^\d+\.\d$")
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@functools.lru_cache(maxsize=None)
def _driver_package_patterns() -> Tuple[Any, ...]:
    return tuple(re.compile(r["pattern"]) for r in load("driver_packages") if r["manager"] in ("apt", "dnf", "zypper"))


def is_driver_package(name: str) -> bool:
    """Whether an installed package's name is one of the NVIDIA driver's (its kernel module, libcuda, NVML,
    nvidia-smi), by the package managers' rows of ``driver_packages``."""
    return any(p.fullmatch(name) for p in _driver_package_patterns())


def arch_packages() -> List[str]:
    """The (normalised) package names the table has rows for."""
    return sorted({str(r["package"]) for r in load(ARCH_AREA)})


def arch_row(package: str, version: str) -> Optional[Row]:
    """The row for ``package`` (normalised name) whose releases contain ``version`` (its local label ignored, as
    pip compares a specifier without one), or None."""
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    public = Version(v.public)
    for row in load(ARCH_AREA):
        if row.get("package") == package and in_range(row["releases"], public) is True:
            return row
    return None


def validate(rows: List[Row]) -> List[str]:
    """A normalised package name, a version specifier, a compute capability "X.Y" and a remedy sentence."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if not _NAME.match(str(row.get("package") or "")):
            problems.append("%s: package must be a normalised PyPI name (flash-attn)" % where)
        try:
            SpecifierSet(str(row.get("releases") or ""))
            if not row.get("releases"):
                problems.append("%s: releases must be a version specifier" % where)
        except InvalidSpecifier:
            problems.append("%s: releases %r is not a version specifier" % (where, row.get("releases")))
        if not _CC.match(str(row.get("cc_min") or "")):
            problems.append("%s: cc_min must be a compute capability X.Y" % where)
        if not isinstance(row.get("remedy"), str) or not row["remedy"].strip():
            problems.append("%s: remedy must say what the vendor says to do" % where)
    return problems


VALIDATORS = {ARCH_AREA: validate}
