"""Floors that software states for itself (``data/driver_floors.json``), beyond the CUDA runtime it carries:
RAPIDS' support notices and platform-support table (per release and CUDA major of the build), Ollama's GPU page
(per release and GPU compute capability), TensorRT's release notes and support matrices. A row holds either the
oldest driver (``min_driver``) or the oldest GPU (``min_cc``, with ``supported_by``: a release that still supports
older GPUs, the last one unless ``supported_by_last`` is false; or ``other_build``: the CUDA major of the same
release's packages that does); or the GPUs newer than the releases (``new_cc``, a range of compute capabilities,
with ``supported_from``: the first release that supports them). A Python package's rows (Warp's ``warp-lang``) may
instead say which CUDA major the release's default wheels were built with (``wheel_cuda_major``: its version then
carries no ``+cuNN`` label), or hold the floor of one feature only (``feature``, with the ``symptom`` it shows): the
rest of the package runs below it. Four questions: which driver-floor rows, which GPU-floor rows and which GPU-ceiling
rows apply to an installed release, and which CUDA major its default wheels carry."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from packaging.version import InvalidVersion, Version

from . import in_range, load, range_problem

Row = Dict[str, Any]
AREA = "driver_floors"
PRODUCTS = ("rapids", "ollama", "tensorrt", "nv-codec-headers", "nvisii", "warp-lang")
#: Products whose driver floor is one per release, keyed by neither CUDA major nor compute capability (FFmpeg's
#: nv-codec-headers: one Video Codec SDK API level per release, README "Minimum required driver versions"; NVISII: one
#: wheel per driver branch, README).
UNKEYED = ("nv-codec-headers", "nvisii")


def _contains(spec: Any, version: Any) -> bool:
    return in_range(spec, version) is True


def _rows(field: str, product: str, release: Any, cuda_major: Optional[Any]) -> List[Row]:
    """The rows of ``product`` carrying ``field`` whose release range holds ``release``; a row keyed by a CUDA major
    applies only to a build of that major."""
    out = []
    for row in load(AREA):
        if field not in row or row.get("product") != product or not _contains(row.get("releases"), release):
            continue
        if "cuda_major" in row and (cuda_major is None or str(row["cuda_major"]) != str(cuda_major)):
            continue
        out.append(row)
    return out


def floors_for(product: str, release: Any, cuda_major: Optional[Any] = None, cc: Optional[Any] = None) -> List[Row]:
    """The rows of ``product`` whose release range holds ``release`` and whose CUDA major (``cuda_major``) or
    compute-capability range (``cc``, "6.1") holds the one given; a row keyed by what is not given never applies.
    An unparsable release applies to nothing."""
    return [row for row in _rows("min_driver", product, release, cuda_major)
            if "cc" not in row or (cc is not None and _contains(row["cc"], cc))]


def wheel_cuda_major(product: str, release: Any) -> Optional[str]:
    """The CUDA major of ``product``'s default wheels of ``release`` (``wheel_cuda_major`` rows), or None."""
    for row in load(AREA):
        if row.get("product") == product and "wheel_cuda_major" in row and _contains(row.get("releases"), release):
            return str(row["wheel_cuda_major"])
    return None


def gpu_floors_for(product: str, release: Any, cuda_major: Optional[Any] = None) -> List[Row]:
    """The GPU-floor rows (``min_cc``) of ``product`` whose release range holds ``release``; a row keyed by a CUDA
    major applies only to a build of that major."""
    return _rows("min_cc", product, release, cuda_major)


def gpu_ceilings_for(product: str, release: Any, cc: Any) -> List[Row]:
    """The GPU-ceiling rows (``new_cc``) of ``product`` whose release range holds ``release`` and whose range of
    compute capabilities holds ``cc`` ("8.9"): the GPU is newer than the release."""
    return [row for row in _rows("new_cc", product, release, None) if _contains(row["new_cc"], cc)]


def validate(rows: List[Row]) -> List[str]:
    """A known product, a release specifier, exactly one of cuda_major (digits) and cc (a specifier), and a
    driver version."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if row.get("product") not in PRODUCTS:
            problems.append("%s: product must be one of %s" % (where, ", ".join(PRODUCTS)))
        for key in ("releases",) + (("cc",) if "cc" in row else ()):
            said = range_problem(where, key, row.get(key) or "")
            if said:
                problems.append(said)
        if "new_cc" in row:
            problems += _gpu_ceiling_problems(row, where)
            continue
        if "wheel_cuda_major" in row:
            if not str(row["wheel_cuda_major"]).isdigit() or any(
                    k in row for k in ("min_driver", "min_cc", "cc", "cuda_major", "feature")):
                problems.append("%s: wheel_cuda_major must be digits, alone beside releases" % where)
            continue
        if "feature" in row and not (isinstance(row["feature"], str) and row["feature"] and "min_driver" in row
                                     and "cuda_major" not in row and "cc" not in row):
            problems.append("%s: a feature's floor is a min_driver keyed by neither cuda_major nor cc" % where)
        if ("min_driver" in row) == ("min_cc" in row):
            problems.append("%s: needs exactly one of min_driver and min_cc" % where)
            continue
        if "cuda_major" in row and not str(row["cuda_major"]).isdigit():
            problems.append("%s: cuda_major must be digits" % where)
        if "min_cc" in row:
            problems += _gpu_floor_problems(row, where)
            continue
        if row.get("product") in UNKEYED or "feature" in row:
            if "cuda_major" in row or "cc" in row:
                problems.append("%s: %s's floors take no cuda_major or cc" % (where, row.get("product")))
        elif ("cuda_major" in row) == ("cc" in row):
            problems.append("%s: needs exactly one of cuda_major and cc" % where)
        try:
            Version(str(row.get("min_driver")))
        except InvalidVersion:
            problems.append("%s: min_driver %r is not a driver version" % (where, row.get("min_driver")))
    return problems


def _gpu_floor_problems(row: Row, where: str) -> List[str]:
    """A GPU floor: a compute capability "X.Y", no ``cc`` key, and exactly one of ``supported_by`` (a release
    below the range) and ``other_build`` (a CUDA major other than the row's)."""
    problems: List[str] = []
    if not re.match(r"^\d+\.\d$", str(row.get("min_cc"))):
        problems.append("%s: min_cc %r is not a compute capability" % (where, row.get("min_cc")))
    if "cc" in row:
        problems.append("%s: a GPU floor takes no cc range" % where)
    if not isinstance(row.get("supported_by_last", True), bool):
        problems.append("%s: supported_by_last must be true or false" % where)
    if ("supported_by" in row) == ("other_build" in row):
        problems.append("%s: a GPU floor needs exactly one of supported_by and other_build" % where)
    elif "supported_by" in row and _contains(row.get("releases"), row["supported_by"]):
        problems.append("%s: supported_by %r is inside the row's own releases" % (where, row["supported_by"]))
    elif "other_build" in row and (not str(row["other_build"]).isdigit() or
                                   str(row["other_build"]) == str(row.get("cuda_major"))):
        problems.append("%s: other_build must be another CUDA major (digits)" % where)
    return problems


def _gpu_ceiling_problems(row: Row, where: str) -> List[str]:
    """A GPU ceiling: a range of compute capabilities (``new_cc``), no other floor, and ``supported_from``: a release
    above the row's own."""
    problems: List[str] = []
    said = range_problem(where, "new_cc", row.get("new_cc") or "", required=True)
    if said:
        problems.append(said)
    if any(k in row for k in ("min_driver", "min_cc", "cc", "cuda_major")):
        problems.append("%s: a GPU ceiling takes no min_driver, min_cc, cc or cuda_major" % where)
    first = row.get("supported_from")
    try:
        Version(str(first))
    except InvalidVersion:
        problems.append("%s: supported_from %r is not a release" % (where, first))
        return problems
    if _contains(row.get("releases"), first):
        problems.append("%s: supported_from %r is inside the row's own releases" % (where, first))
    return problems


VALIDATORS = {AREA: validate}
