"""Container engines and the NVIDIA Container Toolkit (area ``container_toolkit_bugs``).

``container_toolkit_bugs.json``: toolkit releases with a bug that breaks GPU containers, the release that fixed it,
and the toolkit CHANGELOG entry that says so. This module validates the rows and answers which row a release is.
"""

from __future__ import annotations

from typing import List, Optional

from . import Row, load, parse_version

SEVERITIES = ("warning", "error")


def toolkit_bugs() -> List[Row]:
    return load("container_toolkit_bugs")


def toolkit_bug(version: str) -> Optional[Row]:
    """The row of a toolkit release (``1.17.0``; a package's ``1.17.0-1`` reads as its release), or None."""
    want = parse_version(str(version).split("-", 1)[0].split("~", 1)[0])
    if want is None:
        return None
    return next((r for r in toolkit_bugs() if parse_version(r["release"]) == want), None)


def validate_toolkit_bugs(table: List[Row]) -> List[str]:
    problems: List[str] = []
    seen = set()
    for i, r in enumerate(table):
        label = "row %d (%s)" % (i, r.get("release"))
        release, fixed = parse_version(r.get("release")), parse_version(r.get("fixed_in"))
        if release is None or r.get("release") in seen:
            problems.append("%s: release must be a version string, once" % label)
        seen.add(r.get("release"))
        if fixed is None or (release is not None and fixed <= release):
            problems.append("%s: fixed_in must be a later version" % label)
        if r.get("severity") not in SEVERITIES:
            problems.append("%s: severity must be one of %s" % (label, ", ".join(SEVERITIES)))
        for key in ("bug", "effect"):
            if not isinstance(r.get(key), str) or not r[key]:
                problems.append("%s: %s must be a sentence" % (label, key))
    return problems


VALIDATORS = {"container_toolkit_bugs": validate_toolkit_bugs}
