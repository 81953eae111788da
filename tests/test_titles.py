"""Finding titles read as sentences whatever the machine left unread.

Every machine in tests/machines and tests/corpus is diagnosed as captured, then again with the versions
of one layer unreadable (every ``*version*``, ``*.release`` and ``*branch*`` fact of ``driver``, ``cuda``,
``os``... made unknown, as a truncated or garbled file leaves them), and once with every version
unreadable.  No title may carry a hole where a version was: two spaces in a row, a space before
punctuation, empty brackets, ``None``, or the same placeholder twice ("driver unknown, but ... driver
unknown").
"""

from __future__ import annotations

import glob
import os
import re
import time
from typing import Dict, List, Tuple

import pytest

from envdoctor.facts import Fact
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes import ProbeResult
from envdoctor.report import gather, judge

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOTS = sorted(glob.glob(os.path.join(HERE, "machines", "*", "snapshot.json"))
                   + glob.glob(os.path.join(HERE, "corpus", "*", "snapshot.json")))
VERSION_KEY = re.compile(r"version|\.release$|branch")

#: What a title with a missing value looks like.
HOLES: List[Tuple[str, re.Pattern[str]]] = [
    ("two spaces", re.compile(r"\S {2,}\S")),
    ("space before punctuation", re.compile(r"\s[,.;:)]")),
    ("empty brackets", re.compile(r"\(\s*\)|\[\s*\]")),
    ("None", re.compile(r"\bNone\b")),
    ("a placeholder twice", re.compile(r"\b(unknown|unreadable|n/a)\b.*\b\1\b", re.I)),
    ("ends without a value", re.compile(r"\b(version|driver|CUDA|is|of|for|than|with)\s*$")),
]


def _unreadable(probes: List[ProbeResult], keys: Tuple[str, ...]) -> List[ProbeResult]:
    return [ProbeResult(p.name, p.title, [
        Fact(f.key, None, f.source, "unknown", "the file was cut short", f.label) if f.key in keys else f
        for f in p.facts], p.status, p.error, p.duration) for p in probes]


def _variants(probes: List[ProbeResult]) -> Dict[str, Tuple[str, ...]]:
    keys = [f.key for p in probes for f in p.facts if f.status == "ok" and VERSION_KEY.search(f.key)]
    out = {"as captured": ()}
    for layer in sorted({k.split(".", 1)[0] for k in keys}):
        out["%s versions unreadable" % layer] = tuple(k for k in keys if k.split(".", 1)[0] == layer)
    out["every version unreadable"] = tuple(keys)
    return out


def _holes(title: str) -> List[str]:
    found = [name for name, rx in HOLES if rx.search(title)]
    if title != title.strip() or not title:
        found.append("blank at an end")
    return found


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=lambda s: os.path.basename(os.path.dirname(s)))
def test_no_title_has_a_hole_where_a_version_was(snap):
    probes = gather(SnapshotHost(load_snapshot(snap), snap, validated=True))
    bad = []
    for variant, keys in _variants(probes).items():
        report = judge(_unreadable(probes, keys), {"kind": "snapshot", "description": snap}, time.monotonic())
        for fd in report.findings:
            if fd.code == "envdoctor.check_crashed":  # quotes an exception's message, not a sentence of ours
                continue
            holes = _holes(fd.title)
            if holes:
                bad.append("%s (%s): %s: %r" % (fd.code, variant, ", ".join(holes), fd.title))
    assert not bad, "\n".join(bad)


def test_the_hole_detector_sees_the_holes_it_is_for():
    assert _holes("Loaded kernel module is driver unknown, but the user-space library is driver unknown (x)")
    assert _holes("torch  built for CUDA 12.1") and _holes("driver None is too old") and _holes("needs driver )")
    assert _holes("cuDNN () is older than built") and _holes("CUDA runtime needs driver ")
    assert not _holes("Loaded kernel module is driver 550.54.15, but the user-space library is driver 550.90.07 "
                      "(Failed to initialize NVML: Driver/library version mismatch)")


def test_a_library_mismatch_with_both_versions_unreadable_says_it_once():
    snap = os.path.join(HERE, "corpus", "container-image-libnvidia-ml-525-on-host-470", "snapshot.json")
    probes = gather(SnapshotHost(load_snapshot(snap), snap, validated=True))
    keys = ("driver.kernel_module.version", "driver.userspace.version", "driver.userspace.versions")
    for hidden in (keys, keys[:1], keys[1:]):
        report = judge(_unreadable(probes, hidden), {"kind": "snapshot", "description": snap}, time.monotonic())
        fd = next(f for f in report.findings if f.code == "driver.library_mismatch")
        assert fd.severity == "error" and "Driver/library version mismatch" in fd.title
        assert "unknown" not in fd.title and not _holes(fd.title), fd.title
