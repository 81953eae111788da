"""Which libraries a library loads at run time without naming them in its NEEDED entries
(``data/runtime_loads.json``): cuDNN's front library opens its sub-libraries by soname, CTranslate2 opens cuBLAS
and ships cuDNN's front library. The loader model (:mod:`envdoctor.probes.loader`) adds these names to what it
reads from a library's own read-only data, so a record that lacks that data, or a library whose names are
assembled at run time, is resolved alike. Rows keyed by ``package`` are the libraries a Python package's own code
opens by soname (vLLM's NCCL wrapper opens libnccl.so.2 with ctypes): :func:`package_loads`; rows keyed by
``program`` the libraries an application opens by soname (Blender's OptiX device opens libnvoptix.so.1):
:func:`program_loads`."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from packaging.version import InvalidVersion, Version

from .. import lazyre
from . import in_range, load, range_problem

Row = Dict[str, Any]
AREA = "runtime_loads"
_SONAME = lazyre.compile(r"^lib[A-Za-z0-9_+-]+\.so\.\d+$")


def loads_of(stem: str, major: Optional[str], version: Optional[str]) -> List[Row]:
    """The rows for a library of ``stem`` (``libcudnn``, ``libctranslate2``; auditwheel's hash removed) whose soname
    carries ``major`` and whose file name ``version``: a row keyed by ``major`` matches that major, one keyed by
    ``releases`` a version it contains (a file without a version matches no such row)."""
    out = []
    for row in load(AREA):
        if row.get("library") != stem:
            continue
        if "major" in row and str(row["major"]) != str(major):
            continue
        if "releases" in row and in_range(row["releases"], version) is not True:
            continue
        out.append(row)
    return out


def _rows_of(field: str, name: str, version: Optional[str]) -> List[Row]:
    """The rows whose ``field`` is ``name`` and whose releases contain ``version`` (its local label ignored; no
    version or one that does not parse: none)."""
    try:
        public = Version(Version(str(version)).public) if version else None
    except InvalidVersion:
        return []
    if public is None:
        return []
    return [row for row in load(AREA) if row.get(field) == name and in_range(row["releases"], public) is True]


def _names_of(field: str) -> List[str]:
    return sorted({str(row[field]) for row in load(AREA) if row.get(field)})


def package_loads(package: str, version: str) -> List[Row]:
    """The rows for the Python distribution ``package`` (normalised name) whose releases contain ``version``."""
    return _rows_of("package", package, version)


def program_loads(program: str, version: Optional[str]) -> List[Row]:
    """The rows for the application ``program`` (``blender``) whose releases contain ``version``."""
    return _rows_of("program", program, version)


def program_names() -> List[str]:
    """The applications the table has rows for."""
    return _names_of("program")


def package_names() -> List[str]:
    """The Python distributions the table has rows for."""
    return _names_of("package")


def validate(rows: List[Row]) -> List[str]:
    """A library stem, exactly one of major (digits) or releases (a specifier), and versioned sonames to load; or a
    Python package (normalised name) with releases, its sonames, and optionally the variable that overrides them and
    the framework it goes with."""
    problems: List[str] = []
    for i, row in enumerate(rows):
        where = "row %d" % i
        if "program" in row:
            if "library" in row or "major" in row or "package" in row or "with" in row:
                problems.append("%s: a program row has no library, major, package or with" % where)
            if not re.match(r"^[a-z0-9]+(?:-[a-z0-9]+)*$", str(row.get("program") or "")):
                problems.append("%s: program must be a lower-case name (blender)" % where)
            if "releases" not in row:
                problems.append("%s: a program row needs releases" % where)
        elif "package" in row:
            if "library" in row or "major" in row:
                problems.append("%s: a package row has no library or major" % where)
            if not re.match(r"^[a-z0-9]+(?:-[a-z0-9]+)*$", str(row.get("package") or "")):
                problems.append("%s: package must be a normalised PyPI name (vllm)" % where)
            for key in ("unless_env", "with"):
                if key in row and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(row[key])):
                    problems.append("%s: %s must be a name" % (where, key))
        elif not re.match(r"^lib[A-Za-z0-9_+]+$", str(row.get("library") or "")):
            problems.append("%s: library must be a library stem (libcudnn)" % where)
        if "package" in row and "releases" not in row:
            problems.append("%s: a package row needs releases" % where)
        elif "package" not in row and "program" not in row and ("major" in row) == ("releases" in row):
            problems.append("%s: needs exactly one of major and releases" % where)
        elif "major" in row and not str(row["major"]).isdigit():
            problems.append("%s: major must be digits" % where)
        elif "releases" in row:
            said = range_problem(where, "releases", row["releases"])
            if said:
                problems.append(said)
        names = row.get("loads")
        if not isinstance(names, list) or not names or not all(_SONAME.match(str(n)) for n in names):
            problems.append("%s: loads must be a non-empty list of versioned sonames" % where)
    return problems


VALIDATORS = {AREA: validate}
