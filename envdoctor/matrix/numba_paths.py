"""Where Numba's built-in CUDA target looks for libNVVM and libdevice (area ``numba_cuda_paths``).

The table is data read from Numba's own source, one row per release range (``numba/cuda/cudadrv/libs.py`` before
0.44, ``numba/cuda/cuda_paths.py`` from 0.44): for each of ``nvvm`` and ``libdevice`` the ordered places Numba
considers. Numba takes the first place that is *defined* (a variable that is set, a directory whose condition
holds) even when the library is not there, then looks in it for a file matching the row's pattern. This module
validates the rows and gives the row of a Numba release; the probe (``envdoctor.probes.environment``) walks them.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from .. import versions
from . import Row, in_range, load

AREA = "numba_cuda_paths"
KINDS = ("env_file", "env_dir", "prefix_lib", "conda", "conda_nvidia", "cuda_home", "system", "fixed")


def rows() -> List[Row]:
    return load(AREA)


def row_for(version: Any) -> Optional[Row]:
    """The lookup of a Numba release (``0.29.0``), or None when the version cannot be read or no row covers it."""
    v = versions.parse(str(version or ""))
    if v is None:
        return None
    return next((r for r in rows() if in_range(r.get("numba"), v)), None)


def validate(table: List[Row]) -> List[str]:
    problems: List[str] = []
    for i, r in enumerate(table):
        label = "row %d (numba %s)" % (i, r.get("numba"))
        try:
            SpecifierSet(str(r.get("numba")))
        except InvalidSpecifier:
            problems.append("%s: numba must be a version specifier" % label)
        for part in ("nvvm", "libdevice"):
            places = r.get(part)
            if not isinstance(places, list) or not places:
                problems.append("%s: %s must be a non-empty list of places" % (label, part))
                continue
            for place in places:
                kind = place.get("kind") if isinstance(place, dict) else None
                if kind not in KINDS:
                    problems.append("%s: %s place %r: kind must be one of %s" % (label, part, place, ", ".join(KINDS)))
                elif kind.startswith("env_") and not str(place.get("variable") or "").startswith("NUMBA"):
                    problems.append("%s: %s place %r names no Numba variable" % (label, part, place))
                elif kind in ("cuda_home", "system") and not place.get("subdir"):
                    problems.append("%s: %s place %r needs a subdir" % (label, part, place))
                elif kind == "fixed" and not str(place.get("path") or "").startswith("/"):
                    problems.append("%s: %s place %r needs an absolute path" % (label, part, place))
            try:
                re.compile(str(r.get(part + "_pattern")))
            except re.error:
                problems.append("%s: %s_pattern is not a regular expression" % (label, part))
    return problems


VALIDATORS = {AREA: validate}
