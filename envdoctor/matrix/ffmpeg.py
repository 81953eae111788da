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


#: The ``--extra-version`` a package family's builds give FFmpeg's configure, which ``ffmpeg -version`` prints after
#: the release ("ffmpeg version 6.0.1-Jellyfin": ffbuild/version.sh appends it to the VERSION file's release):
#: jellyfin-ffmpeg's .deb build (debian/rules) and its portable builds (builder/build.sh) pass
#: ``--extra-version=Jellyfin`` at every release tag from v4.4.1-1 (https://github.com/jellyfin/jellyfin-ffmpeg,
#: tags v4.4.1-1 to v7.0.2-4, checked 2026-12-01). The portable builds pin nv-codec-headers by commit
#: (builder/scripts.d/50-ffnvcodec.sh), at the same releases as the .deb's docker-build.sh from v5.1.2-5 on: n11.1.5.2,
#: n12.0.16.0 (v6.0-1, v6.0.1-1), n12.0.16.1 (v6.0.1-3 to v7.0.2-4).
EXTRA_VERSIONS = {"Jellyfin": "jellyfin-ffmpeg"}


def _api(headers: str) -> str:
    return ".".join(headers.split(".")[:2])


def release_nv_codec_headers(package: str, release: str) -> Optional[str]:
    """The nv-codec-headers an FFmpeg of ``package`` at upstream ``release`` (``6.0.1``, as ``ffmpeg -version``
    prints it, without the package revision) was built against, whatever its revision: the release the rows give
    when every revision of it has the same, else the lowest API level among them (``12.0``: the driver it needs is
    at least that level's). None when the table does not cover every revision of that release (a release at or
    beyond the last row's ``until``, one before the first row, a gap)."""
    if not release or not all(part.isdigit() for part in release.split(".")):
        return None
    upstream = tuple(int(x) for x in release.split("."))
    spans = []
    for row in load(AREA):
        first, until = _key(str(row["first"])), _key(str(row["until"]))
        if row["package"] != package or first is None or until is None:
            continue
        # revisions count from 1: the row holds some revision of the release when [first, until) meets it
        low = max(first, (upstream, 1))
        if low[0] == upstream and low < until:
            spans.append((first, until, str(row["nv_codec_headers"])))
    spans.sort()
    if not spans or spans[0][0] > (upstream, 1) or spans[-1][1][0] <= upstream:
        return None
    if any(a[1] != b[0] for a, b in zip(spans, spans[1:])):
        return None
    headers = [s[2] for s in spans]
    if len(set(headers)) == 1:
        return headers[0]
    return min((_api(h) for h in headers), key=lambda v: tuple(int(x) for x in v.split(".")))


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
