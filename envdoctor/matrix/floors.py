"""Driver floors that software states for itself (``data/driver_floors.json``), beyond the CUDA runtime it
carries: RAPIDS' support notices and platform-support table (per release and CUDA major of the build), Ollama's
GPU page (per release and GPU compute capability). One question: which rows apply to an installed release."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import load

Row = Dict[str, Any]
AREA = "driver_floors"
PRODUCTS = ("rapids", "ollama")


def _contains(spec: Any, version: Any) -> bool:
    try:
        return SpecifierSet(str(spec)).contains(Version(str(version)), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def floors_for(product: str, release: Any, cuda_major: Optional[Any] = None, cc: Optional[Any] = None) -> List[Row]:
    """The rows of ``product`` whose release range holds ``release`` and whose CUDA major (``cuda_major``) or
    compute-capability range (``cc``, "6.1") holds the one given; a row keyed by what is not given never applies.
    An unparsable release applies to nothing."""
    out = []
    for row in load(AREA):
        if row.get("product") != product or not _contains(row.get("releases"), release):
            continue
        if "cuda_major" in row and (cuda_major is None or str(row["cuda_major"]) != str(cuda_major)):
            continue
        if "cc" in row and (cc is None or not _contains(row["cc"], cc)):
            continue
        out.append(row)
    return out


def validate(rows: List[Row]) -> List[str]:
    """A known product, a release specifier, exactly one of cuda_major (digits) and cc (a specifier), and a
    driver version."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if row.get("product") not in PRODUCTS:
            problems.append("%s: product must be one of %s" % (where, ", ".join(PRODUCTS)))
        for key in ("releases",) + (("cc",) if "cc" in row else ()):
            try:
                SpecifierSet(str(row.get(key) or ""))
            except InvalidSpecifier:
                problems.append("%s: %s %r is not a version specifier" % (where, key, row.get(key)))
        if ("cuda_major" in row) == ("cc" in row):
            problems.append("%s: needs exactly one of cuda_major and cc" % where)
        elif "cuda_major" in row and not str(row["cuda_major"]).isdigit():
            problems.append("%s: cuda_major must be digits" % where)
        try:
            Version(str(row.get("min_driver")))
        except InvalidVersion:
            problems.append("%s: min_driver %r is not a driver version" % (where, row.get("min_driver")))
    return problems


VALIDATORS = {AREA: validate}
