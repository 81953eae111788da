"""The CUDA libraries JAX itself compares with its build when its CUDA backend starts (``data/jax_cuda_checks.json``):
``_check_cuda_versions`` in jax/_src/xla_bridge.py (jax 0.4.17 to 0.6.0) and jax_plugins/cuda/__init__.py (0.6.1
on), read per release tag. Each row is a jax release range and, per library, what the loaded copy is held to."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from packaging.version import InvalidVersion, Version

from . import in_range, load, range_problem

Row = Dict[str, Any]
AREA = "jax_cuda_checks"
AGAINST = ("build", "cuda_release", "minimum", "never")


def checks_for(jax_version: Any) -> Optional[Row]:
    """The row for an installed jax version (its local label ignored), or None (before 0.4.17, or no version)."""
    try:
        public = Version(Version(str(jax_version)).public)
    except InvalidVersion:
        return None
    return next((row for row in load(AREA) if in_range(row["jax"], public) is True), None)


def validate(rows: List[Row]) -> List[str]:
    """A jax specifier per row, a boolean refuses, a quote, and libraries each with a name, a soname stem and what it
    is held to: parts (2 or 3) for build and cuda_release, a version minimum for minimum; ``runs`` false (the release
    defines the check and never calls it: no library), ``skipped_by`` the variable that turns it off."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        said = range_problem(where, "jax", row.get("jax"))
        if said:
            problems.append(said)
        if not isinstance(row.get("refuses"), bool):
            problems.append("%s: refuses must be true or false" % where)
        if not isinstance(row.get("quote"), str) or not row["quote"]:
            problems.append("%s: quote must hold JAX's own source text" % where)
        if "runs" in row and not isinstance(row["runs"], bool):
            problems.append("%s: runs must be true or false" % where)
        skip = row.get("skipped_by")
        if skip is not None and (not isinstance(skip, dict) or not str(skip.get("variable") or "").isupper()
                                 or not skip.get("quote")):
            problems.append("%s: skipped_by needs the variable's name and JAX's own source text" % where)
        libs = row.get("libraries")
        if row.get("runs") is False:
            if libs:
                problems.append("%s: a release that runs no check compares no library" % where)
            continue
        if not isinstance(libs, list) or not libs:
            problems.append("%s: libraries must be a non-empty list" % where)
            continue
        for j, lib in enumerate(libs):
            at = "%s library %d" % (where, j)
            if not isinstance(lib, dict) or not lib.get("name") or not str(lib.get("library") or "").isalpha():
                problems.append("%s: needs a name and a soname stem (cudart)" % at)
                continue
            against = lib.get("against")
            if against not in AGAINST:
                problems.append("%s: against must be one of %s" % (at, ", ".join(AGAINST)))
            elif against in ("build", "cuda_release") and lib.get("parts") not in (2, 3):
                problems.append("%s: parts must be 2 (major.minor) or 3" % at)
            elif against == "minimum":
                try:
                    Version(str(lib.get("minimum")))
                except InvalidVersion:
                    problems.append("%s: minimum %r is not a version" % (at, lib.get("minimum")))
    return problems


VALIDATORS = {AREA: validate}
