"""cuQuantum libraries' releases that refuse a cuTENSOR release their documented requirement admits (area
``cuquantum``, from cuQuantum's release notes): cuTensorNet 1.1.0 (cuQuantum 22.07.0) refuses cuTENSOR 1.6
(CUTENSORNET_STATUS_CUTENSOR_VERSION_MISMATCH), fixed in 1.1.1 (cuQuantum 22.07.1)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import load

Row = Dict[str, Any]
AREA = "cuquantum"
LIBRARIES = ("cutensornet",)


def _in(spec: str, version: str) -> bool:
    try:
        return Version(version) in SpecifierSet(spec)
    except (InvalidSpecifier, InvalidVersion):
        return False


def rejection(library: str, version: str, cutensor: str) -> Optional[Row]:
    """The row saying that ``library`` at ``version`` refuses cuTENSOR ``cutensor``, None when none does."""
    for row in load(AREA):
        if (row["library"] == library and _in(row["releases"], version)
                and _in(row["cutensor_rejected"], cutensor)):
            return row
    return None


def _validate(rows: List[Row]) -> List[str]:
    problems = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if row.get("library") not in LIBRARIES:
            problems.append("%s: library must be one of %s" % (where, ", ".join(LIBRARIES)))
        for key in ("releases", "cutensor_rejected"):
            try:
                SpecifierSet(str(row.get(key)))
            except InvalidSpecifier:
                problems.append("%s: %s must be a version range, got %r" % (where, key, row.get(key)))
        for key in ("cuquantum", "fixed_in", "fixed_cuquantum"):
            try:
                Version(str(row.get(key)))
            except InvalidVersion:
                problems.append("%s: %s must be a release, got %r" % (where, key, row.get(key)))
        if not problems and _in(str(row["releases"]), str(row["fixed_in"])):
            problems.append("%s: fixed_in %s is inside the affected releases" % (where, row["fixed_in"]))
    return problems


VALIDATORS = {AREA: _validate}
