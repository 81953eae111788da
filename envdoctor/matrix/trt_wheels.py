"""How NVIDIA packages TensorRT for pip (area ``tensorrt_wheels``): per family, the metapackage a user installs
(``tensorrt``, ``tensorrt-lean``, ``tensorrt-dispatch``), the runtime wheel of one CUDA major it requires
(``tensorrt-cu12``) and the parts that runtime installs (``tensorrt-cu12-libs``, ``tensorrt-cu12-bindings``).
Every package of a family is published at one version per TensorRT release; this module says which family and
role an installed distribution has, for the check that compares their versions."""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import load

Row = Dict[str, Any]
AREA = "tensorrt_wheels"
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class Member(NamedTuple):
    family: str  # the metapackage's name
    role: str  # "metapackage", "runtime" or "part"
    cuda: str  # the CUDA major of a runtime or a part ("" for the metapackage)
    row: Row


def rows() -> List[Row]:
    return load(AREA)


def _pattern(template: str) -> str:
    return re.escape(template).replace(re.escape("{cuda}"), r"(?P<cuda>\d+)")


@functools.lru_cache(maxsize=None)
def _compiled() -> Tuple[Tuple[Row, Any, Any, Tuple[Any, ...]], ...]:
    return tuple((r, r["metapackage"], re.compile("^%s$" % _pattern(r["runtime"])),
                  tuple(re.compile("^%s$" % _pattern(p)) for p in r["parts"])) for r in rows())


def member(name: str) -> Optional[Member]:
    """The family and role of a distribution (its normalised name), None when it is no TensorRT pip package."""
    for row, meta, runtime, parts in _compiled():
        if name == meta:
            return Member(meta, "metapackage", "", row)
        m = runtime.match(name)
        if m:
            return Member(meta, "runtime", m.group("cuda"), row)
        for p in parts:
            m = p.match(name)
            if m:
                return Member(meta, "part", m.group("cuda"), row)
    return None


def runtime_name(row: Row, cuda: str) -> str:
    return str(row["runtime"]).replace("{cuda}", cuda)


def part_names(row: Row, cuda: str) -> List[str]:
    return [str(p).replace("{cuda}", cuda) for p in row["parts"]]


def validate(table: List[Row]) -> List[str]:
    problems: List[str] = []
    for i, r in enumerate(table):
        label = "row %d (%s)" % (i, r.get("metapackage"))
        if not _NAME.match(str(r.get("metapackage") or "")):
            problems.append("%s: metapackage must be a normalised distribution name" % label)
        runtime = str(r.get("runtime") or "")
        if "{cuda}" not in runtime or not _NAME.match(runtime.replace("{cuda}", "12")):
            problems.append("%s: runtime must be a normalised name holding {cuda}" % label)
        parts = r.get("parts")
        if not isinstance(parts, list) or not parts or any(
                "{cuda}" not in str(p) or not _NAME.match(str(p).replace("{cuda}", "12")) for p in parts):
            problems.append("%s: parts must be a non-empty list of normalised names holding {cuda}" % label)
        if not re.match(r"^\d+(\.\d+)*$", str(r.get("pinned_from") or "")):
            problems.append("%s: pinned_from must be a release" % label)
    return problems


VALIDATORS = {AREA: validate}
