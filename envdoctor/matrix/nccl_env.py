"""NCCL's own variables that change what it would decide from the machine (area ``nccl_env``).

The table is data read from NCCL's source (``envdoctor/matrix/data/nccl_env.json``): each variable, its class
(``topology_override``, ``graph_override``, ``transport``, ``dump``), what it does, where NCCL reads it, and the
finding code that judges a set value.  This module validates the rows and answers two questions: which names
to read, and how NCCL reads a configuration file (``NAME=value`` lines, ``#`` comments, as ``setEnvFile``).
"""

from __future__ import annotations

from typing import Dict, List, Optional

from . import Row, load, parse_version

CLASSES = ("topology_override", "graph_override", "transport", "dump")
VALUES = ("path", "integer", "level")


def rows() -> List[Row]:
    return load("nccl_env")


def names() -> List[str]:
    """Every catalogued variable, in table order."""
    return [str(r["name"]) for r in rows()]


def row(name: str) -> Optional[Row]:
    return next((r for r in rows() if r["name"] == name), None)


def read_conf(text: str) -> Dict[str, str]:
    """The variables of an NCCL configuration file as NCCL's ``setEnvFile`` reads them: one ``NAME=value`` per line
    (the first ``=`` splits; nothing is stripped but the line end), ``#`` lines skipped, the first of a name kept
    (``setenv(name, value, 0)`` never overwrites)."""
    out: Dict[str, str] = {}
    for line in text.splitlines()[:4096]:
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        if name and name not in out:
            out[name[:1023]] = value[:1023]
    return out


def validate_nccl_env(table: List[Row]) -> List[str]:
    problems: List[str] = []
    seen = set()
    for i, r in enumerate(table):
        label = "row %d (%s)" % (i, r.get("name"))
        name = r.get("name")
        if not isinstance(name, str) or not name.startswith("NCCL_"):
            problems.append("%s: name must be an NCCL_ variable" % label)
        elif name in seen:
            problems.append("%s: duplicate name" % label)
        seen.add(name)
        if r.get("class") not in CLASSES:
            problems.append("%s: class must be one of %s" % (label, ", ".join(CLASSES)))
        if r.get("value") not in VALUES:
            problems.append("%s: value must be one of %s" % (label, ", ".join(VALUES)))
        since = r.get("since")
        if since is not None and parse_version(since) is None:
            problems.append("%s: since must be a version string or null" % label)
        if not isinstance(r.get("effect"), str) or not r["effect"]:
            problems.append("%s: effect must be a sentence" % label)
        judged = r.get("judged_by")
        if judged is not None and (not isinstance(judged, str) or "." not in judged):
            problems.append("%s: judged_by must be a finding code or null" % label)
        if not str((r.get("source") or {}).get("url", "")).startswith("https://github.com/NVIDIA/nccl/blob/"):
            problems.append("%s: source.url must point into NCCL's source at a tag" % label)
    return problems


VALIDATORS = {"nccl_env": validate_nccl_env}


# ---------------------------------------------------------------------------------- area nccl_arch

ARCH_KINDS = ("support_added", "fails_before")


def arch_rows() -> List[Row]:
    return load("nccl_arch")


def first_release_for(cc: str) -> Optional[Row]:
    """The ``nccl_arch`` row of a compute capability (``"12.0"``), or None when the table has none."""
    return next((r for r in arch_rows() if r.get("cc") == cc), None)


def validate_nccl_arch(table: List[Row]) -> List[str]:
    problems: List[str] = []
    seen = set()
    for i, r in enumerate(table):
        label = "row %d (cc %s)" % (i, r.get("cc"))
        if parse_version(r.get("cc")) is None or r.get("cc") in seen:
            problems.append("%s: cc must be a compute capability string, once" % label)
        seen.add(r.get("cc"))
        if parse_version(r.get("nccl_min")) is None:
            problems.append("%s: nccl_min must be a version string" % label)
        if r.get("kind") not in ARCH_KINDS:
            problems.append("%s: kind must be one of %s" % (label, ", ".join(ARCH_KINDS)))
        if not isinstance(r.get("why"), str) or not r["why"]:
            problems.append("%s: why must be a sentence" % label)
    return problems


VALIDATORS["nccl_arch"] = validate_nccl_arch
