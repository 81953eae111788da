"""The nv-codec-headers release a packaged FFmpeg was built against (area ``ffmpeg_nv_codec``, from each package
release's own build script): a packaged FFmpeg installs no headers, but its release pins the Video Codec SDK API
level its NVENC/NVDEC code needs, and so the driver it needs."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from . import load

Row = dict
AREA = "ffmpeg_nv_codec"
PACKAGES = ("jellyfin-ffmpeg",)

#: A Jellyfin FFmpeg package version: ``6.0-4-jammy``, ``7.0.2-4-bookworm``, ``5.1.2-5``, with an optional epoch:
#: (upstream, revision).
_PACKAGE_VERSION = re.compile(r"^(?:\d+:)?(\d+(?:\.\d+)*)-(\d+)(?:-[a-z]+)?$")
_HEADERS = re.compile(r"^\d+(?:\.\d+){2,3}$")


def _key(version: str) -> Optional[Tuple[Tuple[int, ...], int]]:
    m = _PACKAGE_VERSION.match(version)
    return (tuple(int(x) for x in m.group(1).split(".")), int(m.group(2))) if m else None


def nv_codec_headers(package: str, version: str) -> Optional[str]:
    """The nv-codec-headers release ``package`` at ``version`` was built against, or None when the table does not
    know that release (outside every row's range, or not a version of that package's form)."""
    key = _key(version)
    if key is None:
        return None
    for row in load(AREA):
        if row["package"] == package and _key(row["first"]) <= key < _key(row["until"]):  # type: ignore[operator]
            return str(row["nv_codec_headers"])
    return None


def _validate(rows: List[Row]) -> List[str]:
    problems = []
    spans = {}  # type: dict
    for i, row in enumerate(rows):
        where = "row %d" % i
        if row.get("package") not in PACKAGES:
            problems.append("%s: package must be one of %s" % (where, ", ".join(PACKAGES)))
            continue
        first, until = _key(str(row.get("first"))), _key(str(row.get("until")))
        if first is None or until is None:
            problems.append("%s: first and until must be package releases (UPSTREAM-REVISION), got %r and %r"
                            % (where, row.get("first"), row.get("until")))
            continue
        if not first < until:
            problems.append("%s: first %s is not before until %s" % (where, row["first"], row["until"]))
        if not _HEADERS.match(str(row.get("nv_codec_headers"))):
            problems.append("%s: nv_codec_headers must be a release such as 12.0.16.1, got %r"
                            % (where, row.get("nv_codec_headers")))
        spans.setdefault(row["package"], []).append((first, until, where))
    for package, ranges in spans.items():
        ranges.sort()
        for (_a_first, a_until, a_where), (b_first, _b_until, b_where) in zip(ranges, ranges[1:]):
            if b_first < a_until:
                problems.append("%s and %s: the ranges of %s overlap" % (a_where, b_where, package))
    return problems


VALIDATORS = {AREA: _validate}
